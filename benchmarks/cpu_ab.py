"""A/B of CPU kernel variants in one process: each variant of one workload built and checked against the float64
reference, then timed in interleaved rounds (the order rotating, a pause before each), as time of a base variant /
time of each other. The A/B scripts under benchmarks/results/ build their variants (a config, a codegen patch) and
hand them here; nothing is asserted about time.
"""
from __future__ import annotations

import contextlib
import os
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial

import numpy as np

import compiler_core as cc
from benchmarks.cpu_matmul import median_ns
from compiler_core.workload import parse_params


def env_target():
    """The C target of the ISA named by $ISA (sse, avx2, avx512), else the host's."""
    return cc.cpu_target(isa=os.environ["ISA"]) if os.environ.get("ISA") else cc.cpu_target()


def case_workload(case: str):
    """`op:params` (as cpu_ops.py takes them) as a workload."""
    op, _, params = case.partition(":")
    return cc.make_workload(op, parse_params(params))


def build_variants(w, target, variants: dict[str, Callable[[], object]]) -> tuple[dict, list, list]:
    """({name: kernel}, inputs, outputs): each variant's callable builds its kernel (under whatever patch it sets);
    each kernel is checked on seeded inputs before anything is timed."""
    inputs = cc.random_inputs(w, 0)
    outputs = [np.zeros(s.shape, dtype=s.dtype) for s in cc.get_op(w.op).output_specs(w)]
    expected = cc.expect(w, inputs)
    kernels = {}
    for name, build in variants.items():
        kernels[name] = build()
        kernels[name](*inputs, *outputs)
        assert cc.verify(w, outputs, expected).ok, f"{w.key}: variant {name} is wrong"
    return kernels, inputs, outputs


def interleaved_ratios(kernels: dict, inputs: list, outputs: list, base: str, rounds: int = 5,
                       seconds: float = 0.2) -> tuple[dict[str, list[float]], dict[str, float]]:
    """({name: [time of base / time of name, per round]} for every other variant, {name: last round's ns})."""
    names = list(kernels)
    ratios: dict[str, list[float]] = {n: [] for n in names if n != base}
    times: dict[str, float] = {}
    for r in range(rounds):
        times = {}
        for n in names[r % len(names):] + names[:r % len(names)]:
            time.sleep(0.05)
            times[n] = median_ns(lambda k=kernels[n]: k(*inputs, *outputs), min_runs=3, min_seconds=seconds, warmup=1)
        for n in ratios:
            ratios[n].append(times[base] / times[n])
    return ratios, times


def summary(ratios: dict[str, list[float]], times: dict[str, float], base: str) -> str:
    """`base/name median [min, max]` per variant, then the last round's times."""
    text = "  ".join(f"{base}/{n} {statistics.median(v):.2f} [{min(v):.2f}, {max(v):.2f}]" for n, v in ratios.items())
    return f"{text}  ({', '.join(f'{n} {t / 1e6:.3f} ms' for n, t in times.items())}, last round)"


def ab_main(variants_for: Callable[[object, dict, object], dict[str, Callable[[], object]]], base: str,
            cases: list[str] | None = None, rounds: int = 5, seconds: float = 0.2) -> None:
    """The A/B scripts' main: for each `op:params` case (default: the command line's), the variants that
    `variants_for(workload, default config, target)` builds, checked and timed against `base`; one line each."""
    target = env_target()
    for case in sys.argv[1:] if cases is None else cases:
        w = case_workload(case)
        config = cc.default_config(w, target)
        kernels, inputs, outputs = build_variants(w, target, variants_for(w, config, target))
        ratios, times = interleaved_ratios(kernels, inputs, outputs, base=base, rounds=rounds, seconds=seconds)
        print(f"{target.arch} {w.key} {config} {summary(ratios, times, base)}", flush=True)


def before_now_main(patched: Callable[[], contextlib.AbstractContextManager]) -> None:
    """ab_main of two variants of each case: `before`, built inside the context `patched()` makes (the patches that
    restore what a change replaced), and `now`."""
    def built(w, config, target, before: bool):
        with patched() if before else contextlib.nullcontext():
            return cc.build(w, config, target)

    ab_main(lambda w, config, target: {"before": partial(built, w, config, target, True),
                                       "now": partial(built, w, config, target, False)}, base="before")
