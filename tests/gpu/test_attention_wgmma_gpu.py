"""Hopper attention on the GPU (sm_90a only): every config of the wgmma engine passes the farm's own check (the
error model's bound against the float64 reference, on the verifier's random and adversarial inputs) on shapes that
end mid-tile, under causal and not, at head_dims that fill 1, 1.25, 2 and 4 TMA boxes."""
from __future__ import annotations

import pytest

import compiler_core as cc
from compiler_core.verify import input_sets
from tests.gpu.reference_runs import built_kernels, failures_on

pytestmark = pytest.mark.gpu
SHAPES = [dict(heads=3, seq_q=333, seq_kv=517, head_dim=80, causal=1, dtype="bfloat16"),
          dict(heads=2, seq_q=200, seq_kv=77, head_dim=128, dtype="float16"),
          dict(heads=2, seq_q=130, seq_kv=300, head_dim=256, causal=1, dtype="float16"),
          dict(heads=1, seq_q=64, seq_kv=100, head_dim=64, causal=1, dtype="bfloat16")]


@pytest.mark.parametrize("params", SHAPES, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items()))
def test_every_wgmma_config_passes_the_farms_check(params):
    from compiler_core.runtime.cuda_runtime import device_target

    target = device_target()
    if not target.has_tensor_cores("wgmma"):
        pytest.skip(f"{target.arch} has no wgmma")
    w = cc.make_workload("attention", params)
    configs = [c for c in cc.get_space(w, target) if c["engine"] == "wgmma"]
    assert configs
    kernels = built_kernels(w, configs, target)
    failures = [(sets.name, config, message[:200]) for sets in input_sets(w, seed=0)
                for config, message in failures_on(w, configs, kernels, sets.arrays)]
    assert not failures, f"{len(failures)} of {len(configs)} configs x input sets fail, first: {failures[0]}"
