"""benchmarks/verify_random_shapes.py on this host's CPU: the draws are valid workloads of every op, deterministic in
the seed, and a run reports a wrong kernel (a test double of the verifier's verdict) with exit status 1."""
from __future__ import annotations

import json

import compiler_core as cc
from benchmarks import verify_random_shapes as fuzz


def test_draws_cover_every_op_and_dtype_and_repeat_with_the_seed():
    ws = fuzz.draw_workloads(list(cc.OPS), 90, seed=5, scale=96)
    assert {w.op for w in ws} == set(cc.OPS)
    assert {w.dtype for w in ws} == {"float32", "float16", "bfloat16"}
    assert [w.key for w in ws] == [w.key for w in fuzz.draw_workloads(list(cc.OPS), 90, seed=5, scale=96)]
    assert any(min(v for v in w.param_dict.values() if isinstance(v, int) and v > 0) == 1 for w in ws)


def test_a_run_passes_and_reports_each_workload(tmp_path, capsys):
    out = tmp_path / "fails.json"
    assert fuzz.main(["--cases", "9", "--configs", "1", "--seed", "3", "--isa", "sse", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "9 workloads, 0 with failing runs" in text
    assert json.loads(out.read_text()) == {}


def test_a_wrong_kernel_is_reported_with_its_config(tmp_path, capsys, monkeypatch):
    real_verify = cc.verify

    def verify_rejecting_layernorm(w, outs, expected):  # test double: one op's kernels come out wrong
        verdict = real_verify(w, outs, expected)
        return verdict if w.op != "layernorm" else cc.VerifyResult(False, 1.0, "planted: layernorm is wrong")

    monkeypatch.setattr(cc, "verify", verify_rejecting_layernorm)
    out = tmp_path / "fails.json"
    assert fuzz.main(["--ops", "softmax,layernorm", "--cases", "2", "--configs", "1", "--out", str(out)]) == 1
    report = json.loads(out.read_text())
    assert len(report) == 1 and next(iter(report)).startswith("layernorm(")
    assert {r["why"] for r in next(iter(report.values()))} == {"planted: layernorm is wrong"}
