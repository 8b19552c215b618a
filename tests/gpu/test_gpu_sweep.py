"""GPU correctness sweep (run on the device machine): random valid configs match the numpy reference on CUDA."""
from __future__ import annotations

import random

import pytest

import compiler_core as cc
from tests.gpu.reference_runs import built_kernels
from tests.sweep_cases import configs_per_case, sweep_workloads

pytestmark = pytest.mark.gpu
CASES = sweep_workloads()


@pytest.mark.parametrize("workload", [w for _, w in CASES], ids=[k for k, _ in CASES])
def test_random_configs_match_reference_on_gpu(workload):
    from compiler_core.runtime.cuda_runtime import device_arch

    target = cc.cuda_target(device_arch())
    seed = sum(map(ord, workload.key))
    configs = cc.get_space(workload, target).sample(random.Random(seed), configs_per_case(workload))
    inputs = cc.random_inputs(workload, seed)
    expected = cc.expect(workload, inputs)
    failures = []
    for config, kernel in zip(configs, built_kernels(workload, configs, target), strict=True):
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
