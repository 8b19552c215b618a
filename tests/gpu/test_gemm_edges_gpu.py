"""The float32 SIMT GEMM on odd shapes runs exactly on a GPU: interior and edge blocks, partial k tiles and
split-K, for the default and several configs of each shape, against the float64 numpy reference. The output is
poisoned with NaN first, so an element no block writes fails. Marked gpu: skipped without CUDA and pycuda."""
from __future__ import annotations

import pytest

import compiler_core as cc
from tests.gemm_edge_cases import ODD_WORKLOADS, configs_for
from tests.gpu.reference_runs import built_kernels, verified_failures

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("workload", ODD_WORKLOADS, ids=lambda w: w.key)
def test_odd_shapes_match_the_reference_on_gpu(workload):
    from compiler_core.runtime.cuda_runtime import device_arch

    target = cc.cuda_target(device_arch())
    configs = configs_for(workload, target)
    failures = verified_failures(workload, configs, built_kernels(workload, configs, target), seed=7)
    assert not failures, f"{len(failures)} of {len(configs)} configs wrong on GPU: {failures}"
