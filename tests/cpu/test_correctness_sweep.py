"""CPU correctness sweep: seeded random valid configs of every op x dtype x shape match the numpy reference."""
from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import pytest

import compiler_core as cc
from tests.sweep_cases import configs_per_case, sweep_workloads

CASES = sweep_workloads()


def _check(w, config, target, seed):
    kernel = cc.build(w, config, target)
    inputs = cc.random_inputs(w, seed)
    result = cc.verify(w, kernel.run(*inputs), cc.expect(w, inputs))
    return config, result


@pytest.mark.parametrize("workload", [w for _, w in CASES], ids=[k for k, _ in CASES])
def test_random_configs_match_reference(workload):
    target = cc.cpu_target()
    space = cc.get_space(workload, target)
    seed = sum(map(ord, workload.key))
    configs = space.sample(random.Random(seed), configs_per_case(workload))
    assert len(configs) == configs_per_case(workload), f"space has only {len(configs)} valid configs for {workload.key}"
    with ThreadPoolExecutor(max_workers=2) as pool:  # gcc runs in subprocesses: two compile at once
        results = list(pool.map(lambda c: _check(workload, c, target, seed), configs))
    failures = [(c, r.message) for c, r in results if not r.ok]
    assert not failures, f"{len(failures)} of {len(configs)} configs wrong, first: {failures[0]}"


@pytest.mark.parametrize("workload", [w for _, w in CASES], ids=[k for k, _ in CASES])
def test_naive_lowering_of_the_tensor_expression_matches_reference(workload):
    kernel = cc.build(workload, {}, cc.cpu_target(), template="naive")
    inputs = cc.random_inputs(workload, 7)
    result = cc.verify(workload, kernel.run(*inputs), cc.expect(workload, inputs))
    assert result.ok, result.message
