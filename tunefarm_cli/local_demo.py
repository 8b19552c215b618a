"""`tunefarm demo` (local form): random search over an op's CPU space, compiling, verifying and timing each config."""
from __future__ import annotations

import random
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

import compiler_core as cc
from compiler_core.workload import parse_params

MIN_TIME_S = 0.05


def time_call(fn, min_time_s: float = MIN_TIME_S, min_runs: int = 5) -> list[float]:
    """Seconds per call: one warm-up, then runs until both a minimum count and a minimum total time."""
    fn()
    samples: list[float] = []
    start = time.perf_counter()
    while len(samples) < min_runs or time.perf_counter() - start < min_time_s:
        t0 = time.perf_counter_ns()
        fn()
        samples.append((time.perf_counter_ns() - t0) / 1e9)
    return samples


def _measure(w, config, target, inputs, expected):
    kernel = cc.build(w, config, target)
    outs = kernel.run(*inputs)
    result = cc.verify(w, outs, expected)
    if not result.ok:
        return None, result.message
    return statistics.median(time_call(kernel.bind(*inputs, *outs))), "ok"


def run_demo(op: str, params: str, trials: int, seed: int) -> int:
    console = Console()
    w = cc.make_workload(op, parse_params(params))
    target = cc.cpu_target()
    space = cc.get_space(w, target)
    default = cc.default_config(w, target)
    configs = [default] + [c for c in space.sample(random.Random(seed), trials) if c != default][: trials - 1]
    inputs = cc.random_inputs(w, seed)
    expected = cc.reference(w, inputs)
    flops = cc.get_op(op).flops(w)
    console.print(f"[bold]{w.key}[/] on {target.arch} ({target.cores} threads): {len(configs)} configs "
                  f"of a space of {space.size} (before constraints)")
    results = []
    with Progress(console=console) as progress, ThreadPoolExecutor(max_workers=2) as pool:
        task = progress.add_task("compile", total=len(configs))
        futures = [pool.submit(cc.build, w, c, target) for c in configs]  # warm the build cache in parallel
        for f in futures:
            f.result()
            progress.advance(task)
        task = progress.add_task("verify + time", total=len(configs))
        for c in configs:
            seconds, status = _measure(w, c, target, inputs, expected)
            results.append((seconds, c, status))
            progress.advance(task)
    ok = sorted((r for r in results if r[0] is not None), key=lambda r: r[0])
    wrong = [r for r in results if r[0] is None]
    if not ok:
        console.print("[red]no config verified[/]")
        return 1
    best_s, best_c, _ = ok[0]
    default_s = results[0][0]
    numpy_s = statistics.median(time_call(lambda: _numpy_call(w, inputs))) if op in ("matmul",) else None
    table = Table(title=f"best of {len(ok)} verified configs ({len(wrong)} wrong)")
    table.add_column("what")
    table.add_column("time (ms)", justify="right")
    table.add_column("GFLOP/s", justify="right")
    for name, s in (("tuned best", best_s), ("untuned default", default_s), ("numpy", numpy_s)):
        if s is not None:
            table.add_row(name, f"{s * 1e3:.3f}", f"{flops / s / 1e9:.1f}")
    console.print(table)
    console.print(f"best config: {best_c}")
    if default_s:
        console.print(f"speed-up over the untuned default: {default_s / best_s:.2f}x")
    if numpy_s:
        console.print(f"ratio to numpy (same process, same threads available): {numpy_s / best_s:.2f}x")
    return 0


def _numpy_call(w, inputs):
    return np.matmul(inputs[0], inputs[1])
