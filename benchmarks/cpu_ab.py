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


def interleaved_ns(runs: dict[str, Callable[[], object]], rounds: int = 5,
                   seconds: float = 0.2) -> dict[str, list[float]]:
    """{name: [median ns of one call, per round]}: every callable (a kernel, a library's op) timed once a round for
    at least `seconds`, the order rotating from round to round and a pause before each (another library's idle
    threads stop spinning)."""
    names = list(runs)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        for n in names[r % len(names):] + names[:r % len(names)]:
            time.sleep(0.05)
            times[n].append(median_ns(runs[n], min_runs=3, min_seconds=seconds, warmup=1))
    return times


def spread(values: list[float]) -> list[float]:
    """[median, min, max]: how the scripts report a ratio over rounds."""
    return [statistics.median(values), min(values), max(values)]


def per_round(times: dict[str, list[float]], numerator: str, denominator: str) -> list[float]:
    """time of `numerator` / time of `denominator`, round by round."""
    return [a / b for a, b in zip(times[numerator], times[denominator], strict=True)]


def kernel_runs(kernels: dict, inputs: list, outputs: list) -> dict[str, Callable[[], object]]:
    """Each kernel as a callable on the checked inputs (for interleaved_ns)."""
    return {n: partial(k, *inputs, *outputs) for n, k in kernels.items()}


def configs_and_torch_ms(w, target, configs: dict[str, dict], rounds: int = 5) -> dict[str, list[float]]:
    """{name: [ms per round]}: each config's kernel, checked first, and PyTorch's op on the same inputs ("torch",
    device_agent.baselines' reference), timed in interleaved rounds."""
    import torch

    from device_agent.baselines import to_torch, torch_op

    builds = {name: partial(cc.build, w, config, target) for name, config in configs.items()}
    kernels, inputs, outputs = build_variants(w, target, builds)
    runs = dict(kernel_runs(kernels, inputs, outputs), torch=torch_op(w, torch, [to_torch(torch, x) for x in inputs]))
    return {n: [t / 1e6 for t in ns] for n, ns in interleaved_ns(runs, rounds).items()}


def interleaved_ratios(kernels: dict, inputs: list, outputs: list, base: str, rounds: int = 5,
                       seconds: float = 0.2) -> tuple[dict[str, list[float]], dict[str, float]]:
    """({name: [time of base / time of name, per round]} for every other variant, {name: last round's ns})."""
    times = interleaved_ns(kernel_runs(kernels, inputs, outputs), rounds, seconds)
    ratios = {n: per_round(times, base, n) for n in kernels if n != base}
    return ratios, {n: t[-1] for n, t in times.items()}


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


def per_isa_main(doc: str, cases: list[str], run_case: Callable, show: Callable[[dict], str],
                 default_rounds: int = 5) -> None:
    """The main of the A/B scripts that compare configs with PyTorch per ISA: the command line's cases (else
    `cases`) and `--json FILE`; for each ISA in $ISAS (default "avx512 avx2") and case, `run_case(case, target,
    rounds)`'s row ($ROUNDS rounds), printed by `show(row)` and written to the JSON file as it goes; 2 threads for
    ours and PyTorch's."""
    import argparse
    import json
    from pathlib import Path

    import torch

    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cases", nargs="*", default=cases)
    p.add_argument("--json", dest="json_out")
    args = p.parse_args()
    torch.set_num_threads(2)
    rounds = int(os.environ.get("ROUNDS", str(default_rounds)))
    result = {"torch": torch.__version__, "rounds": rounds, "rows": []}
    for isa in os.environ.get("ISAS", "avx512 avx2").split():
        target = cc.cpu_target(isa=isa, cores=2)
        print(f"{target.arch}, 2 threads, torch {torch.__version__}, {rounds} interleaved rounds", flush=True)
        for case in args.cases:
            row = dict(run_case(case, target, rounds), arch=target.arch)
            result["rows"].append(row)
            print(show(row), flush=True)
            if args.json_out:
                Path(args.json_out).write_text(json.dumps(result, indent=1))
