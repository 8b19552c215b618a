"""Where a task's time goes inside an agent's worker: build (lowering and module load), verification, timing.

Runs the worker's own `execute` in this process for `--tasks` random valid configs of one workload (each config's
cubin or library built first, as the agent's build pool would), with the farm's default measurement options for
the device kind, and prints per task the seconds in each step and, with --profile, the functions that took the
most cumulative time. Nothing here asserts a time.

    python3 benchmarks/agent_task_profile.py --device cuda:0 --op softmax --params rows=8192,cols=8192 --tasks 20
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import compiler_core as cc  # noqa: E402
from compiler_core.workload import parse_params  # noqa: E402
from device_agent import worker  # noqa: E402
from device_agent.fingerprint import parse_device  # noqa: E402
from device_agent.records import MeasureOptions, Task  # noqa: E402
from device_agent.workload_data import WorkloadCache  # noqa: E402
from tuner_server.measure_policy import AGENT_FIELDS, DEFAULTS  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cpu")
    p.add_argument("--op", default="matmul")
    p.add_argument("--params", default="M=512,N=512,K=512")
    p.add_argument("--tasks", type=int, default=10)
    p.add_argument("--profile", action="store_true", help="also print the top functions by cumulative time")
    args = p.parse_args(argv)

    kind, _ = parse_device(args.device)
    bench = worker.make_bench(worker.WorkerSpec(args.device))
    w = cc.make_workload(args.op, parse_params(args.params))
    configs = cc.get_space(w, bench.target).sample(random.Random(0), n=4 * args.tasks)
    opts = MeasureOptions(**{k: DEFAULTS[kind][k] for k in AGENT_FIELDS})
    cache = WorkloadCache(None)
    t0 = time.perf_counter()
    cache.get(w, worker.input_seed(Task("t", 1, "j", w.key, "{}", opts)))
    print(f"inputs and references: {time.perf_counter() - t0:.2f} s", file=sys.stderr)
    rows, profiler = [], cProfile.Profile()
    for n, config in enumerate(configs):
        if len(rows) >= args.tasks:
            break
        text = cc.config_key(config)
        try:
            source = cc.generate(w, config, bench.target)
        except cc.ConfigError:
            continue
        cubins = None
        if kind == "cuda":
            from compiler_core.runtime.nvcc_check import nvcc_compile

            try:
                cubins = {text: nvcc_compile(source, bench.target.arch)}
            except cc.BuildError:
                continue
        task = Task(f"t{n}", 1, "job", w.key, text, opts)
        t0 = time.perf_counter()
        profiler.enable()
        result, _ = worker.execute(task, bench, cache, cubins, 0.0)
        profiler.disable()
        total = time.perf_counter() - t0
        timed = sum(result.samples_s)
        rows.append(total)
        print(f"{result.status.value:>14} {total * 1e3:8.1f} ms in execute, {timed * 1e3:7.1f} ms of samples "
              f"({len(result.samples_s)}), median {result.median_s * 1e6 if result.median_s else 0:9.1f} us")
    print(f"median task {statistics.median(rows) * 1e3:.1f} ms over {len(rows)}")
    if args.profile:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(30)
        print(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
