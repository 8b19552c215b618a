"""The CUDA attention space: where both engines apply, each config is one engine's, with the other engine's knobs
pinned and its own knobs within that engine's choices (a WMMA config with an 8-key tile computed no scores)."""
from __future__ import annotations

import pytest

import compiler_core as cc
from compiler_core.schedules.cuda import attention, attention_wmma

SM90 = cc.cuda_target("sm_90")
SM80 = cc.cuda_target("sm_80")


@pytest.mark.parametrize("params", [dict(heads=2, seq_q=100, seq_kv=300, head_dim=64, dtype="float16"),
                                    dict(heads=1, seq_q=1, seq_kv=4096, head_dim=128, causal=1, dtype="bfloat16")])
def test_every_valid_config_is_one_engines(params):
    w = cc.make_workload("attention", params)
    wmma_tiles = next(k.choices for k in attention_wmma.space(w, SM90).knobs if k.name == "kv_tile")
    valid = list(cc.get_space(w, SM90))
    assert {c["engine"] for c in valid} == {"simt", "wmma"}
    for c in valid:
        assert all(c[k] == v for k, v in attention.PINNED[c["engine"]].items()), c
        assert c["kv_tile"] in (wmma_tiles if c["engine"] == "wmma" else attention.SIMT_TILES), c
    assert not cc.get_space(w, SM90).is_valid(dict(valid[0], engine="wmma", kv_tile=8, **attention.PINNED["wmma"]))


def test_float32_odd_head_dims_and_old_devices_have_only_simt():
    for w, target in ((cc.make_workload("attention", dict(heads=1, seq_q=8, seq_kv=8, head_dim=64)), SM90),
                      (cc.make_workload("attention", dict(heads=1, seq_q=8, seq_kv=8, head_dim=24, dtype="float16")),
                       SM90),
                      (cc.make_workload("attention", dict(heads=1, seq_q=8, seq_kv=8, head_dim=64, dtype="bfloat16")),
                       cc.cuda_target("sm_75"))):
        names = {k.name for k in cc.get_space(w, target).knobs}
        assert "engine" not in names and cc.lower(w, cc.default_config(w, target), target).kernels[0].name == \
            "attention_cuda"


def test_the_default_takes_tensor_cores_for_prefill_and_simt_for_a_decode_step():
    prefill = cc.make_workload("attention", dict(heads=16, seq_q=2048, seq_kv=2048, head_dim=128, dtype="float16"))
    decode = cc.make_workload("attention", dict(heads=32, seq_q=1, seq_kv=4096, head_dim=128, dtype="float16"))
    assert cc.default_config(prefill, SM90)["engine"] == "wmma"
    assert cc.default_config(decode, SM90)["engine"] == "simt"
    assert cc.lower(prefill, cc.default_config(prefill, SM80), SM80).kernels[0].name == "attention_wmma"
