"""benchmarks/cpu_ab.py, the A/B helper of the CPU benchmark scripts: every variant is checked before it is timed (a
wrong one is named), and each other variant gets a ratio per round."""
from __future__ import annotations

import contextlib

import pytest

import compiler_core as cc
from benchmarks.cpu_ab import ab_main, before_now_main, build_variants, case_workload, interleaved_ratios, summary


def test_variants_are_checked_then_timed_in_rounds():
    target = cc.cpu_target()
    w = case_workload("elementwise:rows=8,cols=64,expr=tanh(x)")
    other = cc.make_workload("elementwise", {"rows": 8, "cols": 64, "expr": "exp(x)"})
    config = cc.default_config(w, target)
    with pytest.raises(AssertionError, match="variant wrong is wrong"):
        build_variants(w, target, {"right": lambda: cc.build(w, config, target),
                                   "wrong": lambda: cc.build(other, config, target)})
    kernels, ins, outs = build_variants(w, target, {"a": lambda: cc.build(w, config, target),
                                                    "b": lambda: cc.build(w, dict(config, simd=1), target)})
    ratios, times = interleaved_ratios(kernels, ins, outs, base="a", rounds=3, seconds=0.01)
    assert list(ratios) == ["b"] and len(ratios["b"]) == 3 and all(r > 0 for r in ratios["b"])
    assert set(times) == {"a", "b"} and summary(ratios, times, "a").startswith("a/b ")


def test_ab_main_prints_one_line_per_case_against_its_base(capsys, monkeypatch):
    monkeypatch.delenv("ISA", raising=False)
    cases = ["elementwise:rows=8,cols=64,expr=tanh(x)", "elementwise:rows=4,cols=32,expr=x*2"]
    seen = []

    def variants(w, config, target):
        seen.append((w.key, config == cc.default_config(w, target)))
        return {"a": lambda: cc.build(w, config, target), "b": lambda: cc.build(w, dict(config, simd=1), target)}

    ab_main(variants, base="a", cases=cases, rounds=2, seconds=0.01)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and all(" a/b " in line for line in lines)
    assert seen == [(case_workload(c).key, True) for c in cases]  # each case at its default config


def test_before_now_main_builds_the_before_variant_inside_its_patches(capsys, monkeypatch):
    import benchmarks.cpu_ab as cpu_ab

    monkeypatch.delenv("ISA", raising=False)
    monkeypatch.setattr(cpu_ab.sys, "argv", ["ab", "elementwise:rows=4,cols=32,expr=x*2"])
    inside, builds = [False], []
    real_build = cc.build

    def build(w, config, target):
        builds.append(inside[0])
        return real_build(w, config, target)

    @contextlib.contextmanager
    def patched():
        inside[0] = True
        yield
        inside[0] = False

    monkeypatch.setattr(cpu_ab.cc, "build", build)
    monkeypatch.setattr(cpu_ab, "interleaved_ratios",
                        lambda k, i, o, base, **kw: ({"now": [1.0]}, {"before": 1.0, "now": 1.0}))
    before_now_main(patched)
    assert builds == [True, False] and " before/now " in capsys.readouterr().out
