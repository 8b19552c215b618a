"""Trials per second of a real farm on this machine: one tuner process (SQLite) and N agent processes on loopback.

It starts the processes with the farm tests' harness (tests/farm/farm_support.py), waits for the agents, submits
one job of `--trials` small-kernel trials (random search, short measure options), waits for it, and reads the
trials back from the database. It prints:

- throughput: trials / (job finished - job started), and the same over the whole wall time from submission;
- per-trial latency spread (p50 / p90 / p99 / max): each agent's service interval (time between its consecutive
  results: build wait + verify + measure + report), the task's end-to-end latency (queued -> result recorded),
  and the compile and measured times the agents reported.

Nothing here asserts anything. Timings on a shared 2-core machine vary from run to run: run it a few times.

    python benchmarks/farm_throughput.py --trials 200 --agents 2
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sqlalchemy import select  # noqa: E402

from tests.farm.farm_support import FAST_MEASURE, Farm, ProcessTracker  # noqa: E402
from tuner_server.db.models import Task  # noqa: E402


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trials", type=int, default=200)
    p.add_argument("--agents", type=int, default=2)
    p.add_argument("--op", default="matmul")
    p.add_argument("--params", default="M=64,N=64,K=64,dtype=float32", help="comma-separated name=value")
    p.add_argument("--builds", type=int, default=2, help="each agent's parallel compilations")
    p.add_argument("--flush-cache", action="store_true", help="flush the cache before each sample (slower)")
    p.add_argument("--warm-build-cache", action="store_true",
                   help="let agents reuse compiler_core's shared build cache (default: a fresh one, cold compiles)")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def parse_params(text: str) -> dict:
    out = {}
    for item in text.split(","):
        name, value = item.split("=", 1)
        out[name.strip()] = int(value) if value.strip().lstrip("-").isdigit() else value.strip()
    return out


def spread(values, scale: float = 1.0, unit: str = "s") -> str:
    if len(values) == 0:
        return "n/a"
    v = np.asarray(values, dtype=float) * scale
    p50, p90, p99 = np.percentile(v, [50, 90, 99])
    return f"p50 {p50:.3g} {unit}, p90 {p90:.3g} {unit}, p99 {p99:.3g} {unit}, max {v.max():.3g} {unit} (n={len(v)})"


def report(farm: Farm, job, submitted: float, finished: float, args) -> None:
    trials = farm.trials(job.id)
    with farm.db() as s:
        queued_at = {t.id: t.created_at for t in s.scalars(select(Task).where(Task.job_id == job.id))}
    by_status: dict[str, int] = {}
    for t in trials:
        by_status[t.status] = by_status.get(t.status, 0) + 1
    busy = (job.finished_at - job.started_at).total_seconds()
    intervals = []
    for agent in {t.agent_id for t in trials}:
        times = sorted(t.created_at.timestamp() for t in trials if t.agent_id == agent)
        intervals += list(np.diff(times))
    end_to_end = [(t.created_at - queued_at[t.task_id]).total_seconds() for t in trials if t.task_id in queued_at]
    print(f"machine: {platform.machine()}, {os.cpu_count()} logical CPUs, load average {os.getloadavg()}")
    print(f"job: {args.op}({args.params}) x {len(trials)} trials, {args.agents} agent(s) x {args.builds} builder(s), "
          f"{'warm' if args.warm_build_cache else 'cold'} build cache, "
          f"measure {FAST_MEASURE | {'flush_cache': args.flush_cache}}; statuses {by_status}")
    print(f"throughput: {len(trials) / busy:.2f} trials/s while running ({busy:.1f} s from first lease to done); "
          f"{len(trials) / (finished - submitted):.2f} trials/s from submission ({finished - submitted:.1f} s)")
    print(f"per-agent service interval: {spread(intervals, 1e3, 'ms')}")
    print(f"task latency, queued -> recorded: {spread(end_to_end)}")
    print(f"compile time (agents' builders): {spread([t.compile_s for t in trials if t.compile_s], 1e3, 'ms')}")
    print(f"measured kernel medians: {spread([t.median_s for t in trials if t.median_s], 1e6, 'us')}")
    for agent in sorted({t.agent_id for t in trials}):
        print(f"  agent {agent[:8]}: {sum(t.agent_id == agent for t in trials)} trials")


def main(argv=None) -> int:
    args = parse_args(argv)
    tracker = ProcessTracker()
    root = Path(tempfile.mkdtemp(prefix="tunefarm-throughput-"))
    # compiler_core caches built kernels under $TMPDIR: a fresh TMPDIR makes every trial compile, as in real tuning.
    agent_env = {} if args.warm_build_cache else {"TMPDIR": str(root / "agent-tmp")}
    (root / "agent-tmp").mkdir()
    farm = Farm(root, f"sqlite:///{root / 'tunefarm.db'}", tracker, env={}, agent_env=agent_env)
    try:
        farm.start_server(wait=False)
        for _ in range(args.agents):
            farm.add_agent(extra_args=("--builds", str(args.builds)))
        farm.wait_healthy()
        farm.wait_for_agents()
        with farm.client() as c:
            submitted = time.monotonic()
            job = c.create_job(args.op, parse_params(args.params), "cpu", args.trials, seed=args.seed,
                               measure={**FAST_MEASURE, "flush_cache": args.flush_cache})
            done = farm.wait_job(job.id, timeout_s=3600)
            finished = time.monotonic()
        print(f"job {done.id}: {done.state}{' (' + done.error + ')' if done.error else ''}")
        report(farm, done, submitted, finished, args)
    finally:
        farm.stop()
        tracker.terminate_all()
        left = tracker.leftovers()
        if left:
            print("processes left behind:", *left, sep="\n  ")
        print(f"logs and database: {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
