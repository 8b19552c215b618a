"""Candidate configs of one GPU workload timed beside PyTorch: built together, then interleaved rounds (the order
rotating each round, `triton.testing.do_bench` with L2 flushed), each checked against PyTorch. What the default-rule
studies under benchmarks/results/ share (a candidate rule against the rule before it, on shapes of their own)."""
from __future__ import annotations

import json
import statistics
from pathlib import Path

import compiler_core as cc
from benchmarks.gpu_ops import compile_all
from benchmarks.gpu_tuning import TOLERANCE, Tensors
from compiler_core.build import build_module
from compiler_core.codegen import generate_source
from compiler_core.runtime.nvcc_check import nvcc_compile


def time_candidates(w, cands: dict, target, torch, do_bench, rounds: int, modules: dict | None = None) -> dict:
    """{workload, device, configs, times (ms per round, per candidate and "torch"), ratios (PyTorch time / the
    candidate's, per round), max_rel_err, correct}. `modules`: each candidate's module, lowered by the caller (a
    study of another lowering of the same config), instead of cc.lower's."""
    if modules is None:
        built = compile_all(w, list(cands.values()), target, target.arch)
    else:
        built = [(c, modules[k], nvcc_compile(generate_source(modules[k], target), target.arch), None)
                 for k, c in cands.items()]
    t = Tensors(w, torch)
    launches = {k: t.launcher(build_module(w, m, target, c, cubin=cb))
                for k, (c, m, cb, _e) in zip(cands, built, strict=True) if m is not None}
    names = [*launches, "torch"]
    times = {n: [] for n in names}
    for r in range(rounds):
        for n in names[r % len(names):] + names[:r % len(names)]:
            fn = t.reference if n == "torch" else launches[n]
            times[n].append(float(do_bench(fn, warmup=25, rep=100, return_mode="median")))
    ratios = {n: [a / b for a, b in zip(times["torch"], times[n], strict=True)] for n in launches}
    tol = TOLERANCE[cc.get_op(w.op).output_specs(w)[0].dtype]
    err = {n: t.error(launches[n]) for n in launches}
    return {"workload": w.key, "device": torch.cuda.get_device_name(), "configs": cands, "times": times,
            "ratios": ratios, "max_rel_err": err, "correct": {n: e <= tol for n, e in err.items()}}


def pair(row: dict, faster: str, base: str) -> None:
    """Adds ratios[f"{faster}/{base}"]: base's time over faster's, per round (> 1: `faster` is faster)."""
    times = row["times"]
    row["ratios"][f"{faster}/{base}"] = [b / f for b, f in zip(times[base], times[faster], strict=True)]


def report(row: dict, out: list, path: str) -> None:
    """Prints the row's ratios (median [min, max]) and any wrong kernel, appends it to `out` and rewrites `path`."""
    cells = {n: f"{statistics.median(v):.3f} [{min(v):.3f}, {max(v):.3f}]" for n, v in row["ratios"].items()}
    wrong = "" if all(row["correct"].values()) else f"WRONG {row['max_rel_err']}"
    print(row["workload"], cells, wrong, flush=True)
    out.append(row)
    Path(path).write_text(json.dumps(out, indent=1))
