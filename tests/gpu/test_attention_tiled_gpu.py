"""Register-tiled SIMT attention on the GPU: every config of the tiled engine passes the farm's own check (the error
model's bound against the float64 reference, on the verifier's random and adversarial inputs) on shapes that end
mid-tile, under causal and not, at head_dims that are and are not whole float4s (cp.async staging or loads), and
one head_dim of 256."""
from __future__ import annotations

import pytest

import compiler_core as cc
from compiler_core.verify import input_sets
from tests.gpu.reference_runs import built_kernels, failures_on

pytestmark = pytest.mark.gpu
SHAPES = [dict(heads=3, seq_q=77, seq_kv=130, head_dim=80, causal=1),
          dict(heads=2, seq_q=300, seq_kv=257, head_dim=128),
          dict(heads=5, seq_q=17, seq_kv=1000, head_dim=13, causal=1),
          dict(heads=1, seq_q=40, seq_kv=70, head_dim=256)]


@pytest.mark.parametrize("params", SHAPES, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items()))
def test_every_tiled_config_passes_the_farms_check(params):
    from compiler_core.runtime.cuda_runtime import device_target

    target = device_target()
    w = cc.make_workload("attention", params)
    configs = [c for c in cc.get_space(w, target) if c["engine"] == "tiled"]
    assert configs
    kernels = built_kernels(w, configs, target)
    failures = [(sets.name, config, message[:200]) for sets in input_sets(w, seed=0)
                for config, message in failures_on(w, configs, kernels, sets.arrays)]
    assert not failures, f"{len(failures)} of {len(configs)} configs x input sets fail, first: {failures[0]}"
