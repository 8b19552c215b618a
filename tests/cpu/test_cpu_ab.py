"""benchmarks/cpu_ab.py, the A/B helper of the CPU benchmark scripts: every variant is checked before it is timed (a
wrong one is named), and each other variant gets a ratio per round."""
from __future__ import annotations

import contextlib

import pytest

import compiler_core as cc
from benchmarks.cpu_ab import (
    ab_main,
    before_now_main,
    build_variants,
    case_workload,
    configs_and_torch_ms,
    interleaved_ns,
    interleaved_ratios,
    per_round,
    spread,
    summary,
)


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


def test_interleaved_rounds_rotate_the_order_and_time_every_callable_each_round():
    calls = []
    runs = {n: (lambda n=n: calls.append(n)) for n in ("a", "b", "c")}
    times = interleaved_ns(runs, rounds=3, seconds=0.001)
    assert {n: len(t) for n, t in times.items()} == {"a": 3, "b": 3, "c": 3} and all(x > 0 for t in times.values()
                                                                                     for x in t)
    firsts = []
    for n in calls:  # each timing calls one callable many times in a row: the first of each run of calls
        if not firsts or firsts[-1] != n:
            firsts.append(n)
    assert firsts[:9] == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]  # warmup and timed calls of one round
    assert per_round({"x": [2.0, 6.0], "y": [1.0, 3.0]}, "x", "y") == [2.0, 2.0]
    assert spread([3.0, 1.0, 2.0]) == [2.0, 1.0, 3.0]


def test_configs_and_torch_ms_checks_each_config_and_times_pytorch_beside_them():
    pytest.importorskip("torch")
    target = cc.cpu_target()
    w = case_workload("softmax:rows=8,cols=64")
    config = cc.default_config(w, target)
    times = configs_and_torch_ms(w, target, {"default": config, "two": dict(config, accumulators=1)}, rounds=2)
    assert set(times) == {"default", "two", "torch"} and all(len(t) == 2 and min(t) > 0 for t in times.values())
