"""GPU correctness sweep (run on the device machine): random valid configs match the numpy reference on CUDA."""
from __future__ import annotations

import os
import random
from concurrent.futures import ThreadPoolExecutor

import pytest

import compiler_core as cc
from compiler_core.build import build_module
from compiler_core.codegen import generate_source
from compiler_core.runtime.nvcc_check import nvcc_compile
from tests.sweep_cases import configs_per_case, sweep_workloads

pytestmark = pytest.mark.gpu
CASES = sweep_workloads()


@pytest.mark.parametrize("workload", [w for _, w in CASES], ids=[k for k, _ in CASES])
def test_random_configs_match_reference_on_gpu(workload):
    from compiler_core.runtime.cuda_runtime import device_arch

    arch = device_arch()
    target = cc.cuda_target(arch)
    seed = sum(map(ord, workload.key))
    configs = cc.get_space(workload, target).sample(random.Random(seed), configs_per_case(workload))
    modules = [cc.lower(workload, c, target) for c in configs]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        cubins = list(pool.map(lambda m: nvcc_compile(generate_source(m, target), arch), modules))
    inputs = cc.random_inputs(workload, seed)
    expected = cc.expect(workload, inputs)
    failures = []
    for config, module, cubin in zip(configs, modules, cubins, strict=True):
        kernel = build_module(workload, module, target, config, cubin=cubin)
        result = cc.verify(workload, kernel.run(*inputs), expected)
        if not result.ok:
            failures.append((config, result.message))
    assert not failures, f"{len(failures)} of {len(configs)} configs wrong on GPU, first: {failures[0]}"


@pytest.mark.parametrize("workload", [w for _, w in CASES], ids=[k for k, _ in CASES])
def test_naive_lowering_matches_reference_on_gpu(workload):
    from compiler_core.runtime.cuda_runtime import device_arch

    kernel = cc.build(workload, {}, cc.cuda_target(device_arch()), template="naive")
    inputs = cc.random_inputs(workload, 3)
    result = cc.verify(workload, kernel.run(*inputs), cc.expect(workload, inputs))
    assert result.ok, result.message
