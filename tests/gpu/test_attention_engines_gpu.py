"""Attention engines on the GPU, config by config: every config of the wgmma engine (sm_90a only) and of the tiled
SIMT engine passes the farm's own check (the error model's bound against the float64 reference, on the verifier's
random and adversarial inputs) on shapes that end mid-tile, under causal and not. wgmma's head_dims fill 1, 1.25, 2
and 4 TMA boxes; the tiled engine's are and are not whole float4s (cp.async staging or loads), and one is 256."""
from __future__ import annotations

import pytest

import compiler_core as cc
from compiler_core.verify import input_sets
from tests.gpu.reference_runs import built_kernels, failures_on

pytestmark = pytest.mark.gpu
CASES = [("wgmma", dict(heads=3, seq_q=333, seq_kv=517, head_dim=80, causal=1, dtype="bfloat16")),
         ("wgmma", dict(heads=2, seq_q=200, seq_kv=77, head_dim=128, dtype="float16")),
         ("wgmma", dict(heads=2, seq_q=130, seq_kv=300, head_dim=256, causal=1, dtype="float16")),
         ("wgmma", dict(heads=1, seq_q=64, seq_kv=100, head_dim=64, causal=1, dtype="bfloat16")),
         ("tiled", dict(heads=3, seq_q=77, seq_kv=130, head_dim=80, causal=1)),
         ("tiled", dict(heads=2, seq_q=300, seq_kv=257, head_dim=128)),
         ("tiled", dict(heads=5, seq_q=17, seq_kv=1000, head_dim=13, causal=1)),
         ("tiled", dict(heads=1, seq_q=40, seq_kv=70, head_dim=256))]


@pytest.mark.parametrize("engine, params", CASES,
                         ids=[f"{e}-" + "-".join(f"{k}{v}" for k, v in p.items()) for e, p in CASES])
def test_every_config_of_the_engine_passes_the_farms_check(engine, params):
    from compiler_core.runtime.cuda_runtime import device_target

    target = device_target()
    if engine == "wgmma" and not target.has_tensor_cores("wgmma"):
        pytest.skip(f"{target.arch} has no wgmma")
    w = cc.make_workload("attention", params)
    configs = [c for c in cc.get_space(w, target) if c["engine"] == engine]
    assert configs
    kernels = built_kernels(w, configs, target)
    failures = [(sets.name, config, message[:200]) for sets in input_sets(w, seed=0)
                for config, message in failures_on(w, configs, kernels, sets.arrays)]
    assert not failures, f"{len(failures)} of {len(configs)} configs x input sets fail, first: {failures[0]}"
