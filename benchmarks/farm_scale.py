"""How the tuner holds up as agents are added: one real tuner process and N agent processes on loopback, several jobs
at once, on PostgreSQL (a throwaway cluster, tests/db/pg_cluster.py) and on SQLite.

The agents are benchmarks/farm_scale_agent.py: device_agent's real shell, state machine and gRPC client with a TEST
DOUBLE runner that sleeps instead of compiling and timing (made-up samples), so 64 of them fit on two cores and the
load on the tuner is what 64 agents make. For each backend and agent count it starts a fresh database, tuner and
agents, submits `--jobs` random-search matmul jobs of equal priority, lets them run `--warmup-s`, then measures
a `--window-s` window and prints:

- trials/s: tasks completed (trials and head-to-head comparisons) in the window, per second;
- LeaseTasks and ReportResults latency p50/p99 as the agents saw them (queueing and transfer included), and
  as the tuner's histogram has them (upper bounds of its buckets);
- DEADLINE_EXCEEDED (and any other failed call) the agents got in the window;
- idle agents: agents that completed nothing in the window ("every agent gets work" means 0);
- fairness: max/min tasks completed per job in the window (1.0 is a perfect share);
- CPU used in the window, in cores: the tuner, the agents, PostgreSQL, and the whole (shared) machine.

Nothing here asserts anything; the machine is shared and the numbers move from run to run.

    python benchmarks/farm_scale.py --agents 8,16,32,64 --backend postgres,sqlite
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path

import httpx
import psutil
from sqlalchemy import func, select

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.db.pg_cluster import create_database, start_cluster  # noqa: E402
from tests.farm.farm_support import FAST_MEASURE, Farm, ProcessTracker, base_env, wait_until  # noqa: E402
from tuner_server.db.models import Agent, Comparison, Trial  # noqa: E402

AGENT = REPO / "benchmarks" / "farm_scale_agent.py"
SHAPES = (64, 96, 128, 160, 192, 224, 256, 288)  # one matmul workload per job: M = N = K = shape
RPCS = ("LeaseTasks", "ReportResults")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--agents", default="8,16,32,64", help="comma-separated agent counts, one run each")
    p.add_argument("--backend", default="postgres,sqlite", help="postgres, sqlite or both (comma-separated)")
    p.add_argument("--jobs", type=int, default=4, help=f"concurrent jobs (at most {len(SHAPES)})")
    p.add_argument("--measure-s", type=float, default=1.0, help="each simulated task's duration (default 1 s)")
    p.add_argument("--warmup-s", type=float, default=15.0)
    p.add_argument("--window-s", type=float, default=40.0)
    p.add_argument("--heartbeat-s", type=float, default=5.0, help="TUNEFARM_HEARTBEAT_INTERVAL_S (the default 5)")
    p.add_argument("--server-env", action="append", default=[], metavar="NAME=VALUE",
                   help="extra TUNEFARM_* setting for the tuner; repeatable")
    p.add_argument("--keep", action="store_true", help="keep the logs and databases")
    return p.parse_args(argv)


def percentile(values, q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


def histogram(text: str, method: str) -> dict[float, float]:
    """Cumulative bucket counts of tunefarm_grpc_request_duration_seconds for `method` (all status codes)."""
    out: Counter = Counter()
    pattern = re.compile(r'tunefarm_grpc_request_duration_seconds_bucket\{([^}]*)\} ([0-9.e+]+)')
    for labels, value in pattern.findall(text):
        fields = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        if fields.get("method") == method:
            out[float(fields["le"])] += float(value)
    return dict(out)


def bucket_percentile(before: dict, after: dict, q: float) -> str:
    """The upper bound of the bucket holding the q-th percentile of the calls between two scrapes."""
    bounds = sorted(after)
    counts = [after[b] - before.get(b, 0.0) for b in bounds]
    if not counts or counts[-1] <= 0:
        return "n/a"
    for bound, count in zip(bounds, counts, strict=True):
        if count >= q / 100 * counts[-1]:
            return f"<={bound * 1e3:.0f} ms" if math.isfinite(bound) else ">10 s"
    return "n/a"


def scrape(farm: Farm) -> str:
    response = httpx.get(farm.url + "/metrics", headers={"Authorization": f"Bearer {farm.admin_token}"}, timeout=60)
    response.raise_for_status()
    return response.text


def done_since(farm: Farm, since: datetime, until: datetime | None = None) -> tuple[Counter, Counter]:
    """(tasks completed per job, per agent) between two times: trials and comparisons."""
    per_job, per_agent = Counter(), Counter()
    with farm.db() as s:
        for row in (Trial, Comparison):
            query = select(row.job_id, row.agent_id, func.count()).where(row.created_at >= since)
            if until is not None:
                query = query.where(row.created_at < until)
            for job_id, agent_id, n in s.execute(query.group_by(row.job_id, row.agent_id)).all():
                per_job[job_id] += n
                per_agent[agent_id] += n
    return per_job, per_agent


class Run:
    """One tuner, its database and N TEST DOUBLE agents."""

    def __init__(self, root: Path, url: str, n_agents: int, args: argparse.Namespace, cluster=None):
        self.root, self.n_agents, self.args, self.cluster = root, n_agents, args, cluster
        self.tracker = ProcessTracker()
        extra = dict(item.split("=", 1) for item in args.server_env)
        self.farm = Farm(root, url, self.tracker, env={"TUNEFARM_HEARTBEAT_INTERVAL_S": str(args.heartbeat_s),
                                                        **extra})
        self.names = [f"agent-{i:02d}" for i in range(n_agents)]
        self.agents = []

    def start(self) -> None:
        self.farm.start_server()
        for name in self.names:
            cmd = [sys.executable, str(AGENT), "--server", f"127.0.0.1:{self.farm.grpc_port}", "--token-file",
                   str(self.farm.enrolment_token_file), "--name", name, "--measure-s", str(self.args.measure_s),
                   "--summary", str(self.root / f"{name}.json")]
            self.agents.append(self.tracker.spawn(name, cmd, base_env(), self.root / f"{name}.log"))
        wait_until(lambda: set(self.names) <= self.farm.active_agent_names(), f"{self.n_agents} agents to register",
                   timeout_s=60 + 3 * self.n_agents, interval_s=1.0, diagnostics=self.farm.logs)

    def submit(self) -> list[str]:
        budget = min(10_000, int(3 * self.n_agents * (self.args.warmup_s + self.args.window_s) / self.args.measure_s
                                 / self.args.jobs) + 100)
        with self.farm.client() as c:
            return [c.create_job("matmul", {"M": n, "N": n, "K": n, "dtype": "float32"}, "cpu", budget,
                                 strategy="random", seed=i, measure=FAST_MEASURE).id
                    for i, n in enumerate(SHAPES[:self.args.jobs])]

    def stop(self, jobs: list[str]) -> list[dict]:
        with suppress(Exception), self.farm.client() as c:
            for job_id in jobs:
                c.cancel_job(job_id)
        self.tracker.stop(self.agents, grace_s=30)
        summaries = []
        for name in self.names:
            with suppress(OSError, ValueError):
                summaries.append(json.loads((self.root / f"{name}.json").read_text()))
        self.farm.stop()
        self.tracker.terminate_all()
        return summaries


def wait_for_exit(tracker: ProcessTracker, timeout_s: float = 15.0) -> list[str]:
    """Processes still alive after `timeout_s` (the tuner's pool workers exit shortly after it)."""
    deadline = time.monotonic() + timeout_s
    while (left := tracker.leftovers()) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def agent_figures(summaries: list[dict], t0: float, t1: float) -> dict:
    """Latency percentiles (ms) and failures of the calls the agents started in the window [t0, t1) (unix s)."""
    out: dict = {"failures": Counter()}
    for rpc in RPCS:
        window = [lat for s in summaries for start, lat in s["latencies"].get(rpc, []) if t0 <= start < t1]
        out[rpc] = (percentile(window, 50) * 1e3, percentile(window, 99) * 1e3, len(window))
    for s in summaries:
        for start, call, code in s.get("failed_calls", []):
            if t0 <= start < t1:
                out["failures"][f"{call} {code}"] += 1
    return out


def cpu_seconds(run: Run) -> dict[str, dict[tuple[int, float], float]]:
    """CPU seconds so far per process ((pid, start time) -> seconds) of the tuner, the agents and this run's
    PostgreSQL cluster (the postmaster and its backends), and the whole machine's busy time."""
    def used(procs) -> dict[tuple[int, float], float]:
        out = {}
        for p in procs:
            with suppress(psutil.Error):
                out[(p.pid, p.create_time())] = sum(p.cpu_times()[:2])
        return out

    postgres = []
    if run.cluster is not None:
        with suppress(OSError, ValueError, psutil.Error):
            postmaster = psutil.Process(int((run.cluster.data / "postmaster.pid").read_text().split()[0]))
            postgres = [postmaster, *postmaster.children(recursive=True)]
    machine = psutil.cpu_times()
    return {"tuner": used([psutil.Process(run.farm.server.pid)]),
            "agents": used(psutil.Process(a.pid) for a in run.agents if a.alive()),
            "postgres": used(postgres), "machine": {(0, 0.0): machine.user + machine.system + machine.nice}}


def cpu_cores(before: dict, after: dict, seconds: float) -> dict[str, float]:
    """Cores used between two `cpu_seconds` snapshots (a process started between them counts from its start)."""
    return {group: sum(t - before[group].get(key, 0.0) for key, t in after[group].items()) / seconds
            for group in after}


def measure(run: Run, jobs: list[str], label: str) -> dict:
    args, farm = run.args, run.farm
    with farm.client() as c:
        wait_until(lambda: all(c.job(j).state == "running" for j in jobs), "every job to start", 120, 1.0)
    time.sleep(args.warmup_s)
    before, cpu0 = scrape(farm), cpu_seconds(run)
    t0_wall, t0 = time.time(), datetime.now(UTC)
    deadline = time.monotonic() + args.window_s
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(5.0, left))
        per_job, per_agent = done_since(farm, t0)
        elapsed = time.time() - t0_wall
        print(f"  [{label}] {elapsed:4.0f}/{args.window_s:.0f} s: {sum(per_job.values())} tasks done "
              f"({sum(per_job.values()) / elapsed:.1f}/s), {len(per_agent)}/{run.n_agents} agents with work, "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
    t1_wall, t1 = time.time(), datetime.now(UTC)
    cpu = cpu_cores(cpu0, cpu_seconds(run), t1_wall - t0_wall)
    after = scrape(farm)
    per_job, per_agent = done_since(farm, t0, t1)
    names = {}
    with farm.db() as s:
        names = dict(s.execute(select(Agent.id, Agent.name)).all())
    worked = {names.get(a) for a in per_agent}
    shares = [per_job.get(j, 0) for j in jobs]
    return {"t0": t0_wall, "t1": t1_wall, "done": sum(shares), "rate": sum(shares) / (t1_wall - t0_wall),
            "per_job": shares, "fairness": max(shares) / min(shares) if min(shares) else math.inf,
            "idle": sorted(set(run.names) - worked), "cpu": cpu,
            "server": {rpc: (bucket_percentile(histogram(before, rpc), histogram(after, rpc), 50),
                             bucket_percentile(histogram(before, rpc), histogram(after, rpc), 99)) for rpc in RPCS}}


def run_one(backend: str, n_agents: int, args: argparse.Namespace, cluster) -> dict:
    root = Path(tempfile.mkdtemp(prefix=f"tunefarm-scale-{backend}-{n_agents}-"))
    url = (f"sqlite:///{root / 'tunefarm.db'}" if backend == "sqlite"
           else create_database(cluster, f"scale_{n_agents}_{int(time.time())}"))
    label = f"{backend}, {n_agents} agents"
    run, jobs, summaries = Run(root, url, n_agents, args, cluster), [], []
    print(f"{label}: starting the tuner and {n_agents} agents ({root})", flush=True)
    try:
        run.start()
        jobs = run.submit()
        result = measure(run, jobs, label)
    finally:
        summaries = run.stop(jobs)
        left = wait_for_exit(run.tracker)
        if left:
            print("  processes left behind:", *left, sep="\n    ")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    result.update(agent_figures(summaries, result["t0"], result["t1"]), backend=backend, agents=n_agents,
                  summaries=len(summaries))
    print_result(result)
    return result


def print_result(r: dict) -> None:
    fails = ", ".join(f"{k} x{v}" for k, v in sorted(r["failures"].items())) or "none"
    cpu = r["cpu"]
    print(f"  {r['backend']}, {r['agents']} agents: {r['rate']:.1f} tasks/s ({r['done']} in the window); CPU in cores: "
          f"tuner {cpu['tuner']:.2f}, agents {cpu['agents']:.2f}, postgres {cpu['postgres']:.2f}, whole machine "
          f"{cpu['machine']:.2f} of {os.cpu_count()}")
    for rpc in RPCS:
        p50, p99, n = r[rpc]
        s50, s99 = r["server"][rpc]
        print(f"    {rpc:<13} agents saw p50 {p50:7.1f} ms  p99 {p99:7.1f} ms (n={n}); tuner histogram p50 {s50}, "
              f"p99 {s99}")
    print(f"    failed calls in the window: {fails}")
    print(f"    idle agents: {len(r['idle'])}{' ' + ', '.join(r['idle']) if r['idle'] else ''}; tasks per job "
          f"{r['per_job']}, max/min {r['fairness']:.2f}; agent summaries {r['summaries']}/{r['agents']}", flush=True)


def main(argv=None) -> int:
    args = parse_args(argv)
    counts = [int(n) for n in args.agents.split(",")]
    backends = [b.strip() for b in args.backend.split(",")]
    print(f"machine: {platform.machine()}, {os.cpu_count()} logical CPUs, load average {os.getloadavg()}; "
          f"{args.jobs} jobs, tasks of {args.measure_s} s (TEST DOUBLE agents), warm-up {args.warmup_s} s, "
          f"window {args.window_s} s", flush=True)
    results = []
    for backend in backends:
        cluster = start_cluster() if backend == "postgres" else None
        try:
            for n in counts:
                results.append(run_one(backend, n, args, cluster))
        finally:
            if cluster is not None:
                cluster.stop()
    print("\nbackend    agents  tasks/s  Lease p50/p99 ms  Report p50/p99 ms  failed calls  idle  max/min  tuner CPU "
          "(cores)")
    for r in results:
        lease, report = r["LeaseTasks"], r["ReportResults"]
        print(f"{r['backend']:<10} {r['agents']:>6} {r['rate']:8.1f}  {lease[0]:7.1f}/{lease[1]:<8.1f}"
              f" {report[0]:7.1f}/{report[1]:<9.1f} {sum(r['failures'].values()):>12}"
              f"  {len(r['idle']):>4}  {r['fairness']:7.2f}  {r['cpu']['tuner']:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
