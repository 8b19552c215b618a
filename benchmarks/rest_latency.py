"""Latency of GET /v1/best under concurrent load, against a real tuner process (idle: no agents, no jobs running) on
loopback, over SQLite and PostgreSQL (a throwaway cluster, tests/db/pg_cluster.py).

For each backend (and, on PostgreSQL, each `--workers` count: TUNEFARM_REST_WORKERS) it seeds a fresh database with
one head schedule and a read token, starts `python -m tuner_server` on it, waits until every REST process is up, then
fires `--concurrency` requests at once over as many keep-alive connections, `--rounds` times after one warm-up round,
and prints p50/p99 per round and over all rounds, the requests per second, and the tuner's CPU per request (all its
processes). GET /health (no token, one SELECT 1) is measured the same way as a baseline.

The load comes from this process: `--client raw` (default) speaks minimal HTTP/1.1 over asyncio streams, so the
client's own CPU (two cores are shared with the server here) stays small next to the server's; `--client httpx` uses
httpx.AsyncClient as an application would. Nothing here asserts a time.

    python benchmarks/rest_latency.py --backend sqlite,postgres --workers 1,2 --concurrency 100 --rounds 5
"""
from __future__ import annotations

import argparse
import asyncio
import math
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TOKEN = "tf_benchmark_read_token_0123456789"
DEVICE = "cpu-x86_64-avx2-2c"
PARAMS = {"M": 512, "N": 512, "K": 512, "dtype": "float32"}
FINGERPRINT = {"kind": "cpu", "model": "bench", "arch": "x86_64", "isa_flags": ["avx2"], "compute_units": 2}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", default="sqlite,postgres", help="sqlite, postgres or both (comma-separated)")
    p.add_argument("--workers", default="1,2", help="REST processes on PostgreSQL, comma-separated (SQLite: 1)")
    p.add_argument("--concurrency", type=int, default=100, help="requests fired at once (and connections)")
    p.add_argument("--rounds", type=int, default=5, help="measured rounds (after one warm-up round)")
    p.add_argument("--client", choices=("raw", "httpx"), default="raw")
    return p.parse_args(argv)


def fingerprint() -> dict:
    """A CPU agent's fingerprint with the compiler target it registers (the class keys the head)."""
    import compiler_core as cc

    return {**FINGERPRINT, "target": cc.cpu_target(isa="avx2", cores=2).to_dict()}


def seed(url: str) -> None:
    """Migrate and seed: a read token, a CPU agent, and one measured trial that became the head (version 1)."""
    import compiler_core as cc
    from tuner_server import repo
    from tuner_server.db import make_engine, make_session_factory, session_scope, upgrade_to_head
    from tuner_server.targets import target_for_class

    upgrade_to_head(url)
    engine = make_engine(url)
    workload = cc.make_workload("matmul", PARAMS)
    with session_scope(make_session_factory(engine)) as s:
        repo.register_token("bench", "read", TOKEN, session=s)
        agent = repo.register_agent(fingerprint(), "bench-agent", cc.codegen_version(), session=s).agent
        job = repo.create_job(repo.JobSpec(workload.key, "cpu", 1), session=s)
        repo.enqueue_configs(job.id, [cc.default_config(workload, target_for_class(DEVICE, session=s))], session=s)
        (task,) = repo.lease_tasks(agent.id, 1, session=s)
        report = repo.TrialReport(task.task_id, task.attempt, "OK", samples_s=(1e-3,) * 5, median_s=1e-3,
                                  ci_low_s=0.99e-3, ci_high_s=1.01e-3, codegen_version=cc.codegen_version())
        assert repo.record_result(agent.id, report, session=s).promoted is not None
        repo.finish_job(job.id, session=s, state="done")
    engine.dispose()


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Tuner:
    """`python -m tuner_server` on a seeded database, REST on a free port, `workers` REST processes."""

    def __init__(self, url: str, workers: int, root: Path):
        self.port, self.workers, self.log = free_port(), workers, root / f"tuner-{workers}.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("TUNEFARM_")}
        env.update(PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p),
                   TUNEFARM_DATABASE_URL=url, TUNEFARM_DATA_DIR=str(root / "data"),
                   TUNEFARM_REST_PORT=str(self.port), TUNEFARM_GRPC_PORT="0", TUNEFARM_REST_WORKERS=str(workers),
                   TUNEFARM_ENROLMENT_TOKEN="tfe_benchmark_enrolment_token", TUNEFARM_FEATURE_WORKERS="0")
        self.proc = subprocess.Popen([sys.executable, "-m", "tuner_server"], cwd=REPO,
                                     env=env, stdout=self.log.open("w"), stderr=subprocess.STDOUT)

    def wait_ready(self, timeout_s: float = 120) -> None:
        """Until every REST process has started (a connection opened earlier would stay with the first)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the tuner exited with {self.proc.returncode}:\n{self.log.read_text()[-3000:]}")
            started = len(re.findall(r"Application startup complete", self.log.read_text()))
            if started >= self.workers and self._health():
                return
            time.sleep(0.2)
        raise RuntimeError(f"the tuner's {self.workers} REST process(es) did not start in {timeout_s} s")

    def _health(self) -> bool:
        import urllib.request

        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def cpu_s(self) -> float:
        """CPU seconds of the tuner and its REST workers so far."""
        total = 0.0
        try:
            root = psutil.Process(self.proc.pid)
            for p in [root, *root.children(recursive=True)]:
                total += sum(p.cpu_times()[:2])
        except psutil.Error:
            pass
        return total

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# ---- clients: each returns per-request latency (s) or what went wrong ----------------------------------------

class RawConnection:
    """One keep-alive HTTP/1.1 connection: send a GET, read the status line, headers and Content-Length body."""

    def __init__(self, port: int):
        self.port, self.reader, self.writer = port, None, None

    async def get(self, request: bytes) -> float | str:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        start = time.perf_counter()
        self.writer.write(request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        length = int(re.search(rb"(?i)content-length:\s*(\d+)", head)[1])
        await self.reader.readexactly(length)
        elapsed = time.perf_counter() - start
        status = head.split(b" ", 2)[1]
        return elapsed if status == b"200" else f"HTTP {status.decode()}"

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def raw_rounds(port: int, path: str, headers: dict, concurrency: int, rounds: int) -> list:
    lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", *(f"{k}: {v}" for k, v in headers.items())]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode()
    connections = [RawConnection(port) for _ in range(concurrency)]
    results = []
    try:
        for _ in range(rounds + 1):
            t0 = time.perf_counter()
            batch = await asyncio.gather(*(c.get(request) for c in connections), return_exceptions=True)
            results.append((time.perf_counter() - t0, [b if not isinstance(b, BaseException) else repr(b)
                                                       for b in batch]))
    finally:
        for c in connections:
            c.close()
    return results


async def httpx_rounds(port: int, path: str, headers: dict, concurrency: int, rounds: int) -> list:
    import httpx

    async def one(client) -> float | str:
        t0 = time.perf_counter()
        try:
            response = await client.get(path, headers=headers)
        except httpx.HTTPError as exc:
            return f"{type(exc).__name__}: {exc}"
        return time.perf_counter() - t0 if response.status_code == 200 else f"HTTP {response.status_code}"

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency, keepalive_expiry=30)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", limits=limits, timeout=60) as client:
        results = []
        for _ in range(rounds + 1):
            t0 = time.perf_counter()
            batch = await asyncio.gather(*(one(client) for _ in range(concurrency)))
            results.append((time.perf_counter() - t0, batch))
        return results


# ---- report --------------------------------------------------------------------------------------------------

def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


def report(name: str, results: list, cpu_s: float) -> tuple[float, float]:
    """One line per measured round (the warm-up round is dropped) and one over all; returns (p50, p99) in ms."""
    print(f"  {name}")
    failures = [x for _, batch in results for x in batch if isinstance(x, str)]
    if failures:
        print(f"    {len(failures)} request(s) failed (warm-up included), e.g. {failures[0]}")
    every = []
    for i, (wall, batch) in enumerate(results[1:], 1):
        ok = [x for x in batch if not isinstance(x, str)]
        every += ok
        if ok:
            print(f"    round {i}: p50 {percentile(ok, 50) * 1e3:7.1f} ms  p99 {percentile(ok, 99) * 1e3:7.1f} ms  "
                  f"{len(ok) / wall:6.0f} req/s")
    if not every:
        return math.nan, math.nan
    p50, p99 = percentile(every, 50) * 1e3, percentile(every, 99) * 1e3
    print(f"    all:     p50 {p50:7.1f} ms  p99 {p99:7.1f} ms  (n={len(every)}); tuner CPU "
          f"{cpu_s / len(every) * 1e3:.2f} ms per request")
    return p50, p99


def measure(url: str, workers: int, args: argparse.Namespace, root: Path) -> dict:
    tuner = Tuner(url, workers, root)
    try:
        tuner.wait_ready()
        load = raw_rounds if args.client == "raw" else httpx_rounds
        query = "&".join(f"{k}={v}" for k, v in PARAMS.items())
        out = {}
        for name, path, headers in (
                ("GET /v1/best", f"/v1/best?op=matmul&{query}&device={DEVICE}", {"Authorization": f"Bearer {TOKEN}"}),
                ("GET /health", "/health", {})):
            cpu0 = tuner.cpu_s()
            results = asyncio.run(load(tuner.port, path, headers, args.concurrency, args.rounds))
            out[name] = report(name, results, tuner.cpu_s() - cpu0)
        return out
    finally:
        tuner.stop()


def main(argv=None) -> int:
    args = parse_args(argv)
    backends = [b.strip() for b in args.backend.split(",")]
    print(f"python {platform.python_version()}, {len(os.sched_getaffinity(0))} CPUs, load average "
          f"{os.getloadavg()}; {args.concurrency} concurrent requests x {args.rounds} rounds (+1 warm-up), client "
          f"{args.client}")
    summary = []
    with tempfile.TemporaryDirectory(prefix="tunefarm-rest-bench-") as tmp:
        for backend in backends:
            cluster = None
            if backend == "postgres":
                from tests.db.pg_cluster import start_cluster

                cluster = start_cluster()
            try:
                for workers in ([int(w) for w in args.workers.split(",")] if cluster else [1]):
                    root = Path(tempfile.mkdtemp(dir=tmp))
                    if cluster is None:
                        url = f"sqlite:///{root / 'farm.db'}"
                    else:
                        from tests.db.pg_cluster import create_database

                        url = create_database(cluster, f"rest_{workers}_{int(time.time())}")
                    seed(url)
                    print(f"\n{backend}, {workers} REST process(es):")
                    figures = measure(url, workers, args, root)
                    summary.append((backend, workers, *figures["GET /v1/best"], *figures["GET /health"]))
            finally:
                if cluster is not None:
                    cluster.stop()
    print("\nbackend    REST processes  /v1/best p50/p99 ms  /health p50/p99 ms")
    for backend, workers, b50, b99, h50, h99 in summary:
        print(f"{backend:<10} {workers:>14}  {b50:8.1f}/{b99:<9.1f}  {h50:7.1f}/{h99:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
