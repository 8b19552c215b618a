"""The float32 SIMT GEMM on odd shapes runs exactly on a GPU: interior and edge blocks, partial k tiles and
split-K, for the default and several configs of each shape, against the float64 numpy reference. The output is
poisoned with NaN first, so an element no block writes fails. Marked gpu: skipped without CUDA and pycuda."""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import compiler_core as cc
from compiler_core.build import build_module
from compiler_core.codegen import generate_source
from compiler_core.runtime.nvcc_check import nvcc_compile
from tests.gemm_edge_cases import ODD_WORKLOADS, configs_for

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("workload", ODD_WORKLOADS, ids=lambda w: w.key)
def test_odd_shapes_match_the_reference_on_gpu(workload):
    from compiler_core.runtime.cuda_runtime import device_arch

    arch = device_arch()
    target = cc.cuda_target(arch)
    configs = configs_for(workload, target)
    modules = [cc.lower(workload, c, target) for c in configs]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        cubins = list(pool.map(lambda m: nvcc_compile(generate_source(m, target), arch), modules))
    inputs = cc.random_inputs(workload, seed=7)
    expected = cc.expect(workload, inputs)
    specs = cc.get_op(workload.op).tensor_specs(workload)[len(inputs):]
    failures = []
    for config, module, cubin in zip(configs, modules, cubins, strict=True):
        kernel = build_module(workload, module, target, config, cubin=cubin)
        outs = [np.full(s.shape, np.nan, dtype=s.dtype) for s in specs]
        kernel(*inputs, *outs)
        result = cc.verify(workload, outs, expected)
        if not result.ok:
            failures.append((config, result.message))
    assert not failures, f"{len(failures)} of {len(configs)} configs wrong on GPU: {failures}"
