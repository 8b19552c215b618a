"""Latency of GET /v1/best under concurrent load, against a real uvicorn server on loopback.

The server runs in a child process (so the load generator does not share its interpreter) over a temporary
SQLite database seeded with one head schedule and a read token. The parent fires `--concurrency` requests at
once (asyncio + httpx.AsyncClient, at most `--concurrency` in flight), `--rounds` times after one warm-up round,
and prints p50/p99 per round and over all rounds; GET /health (no auth, no schedule lookup) is measured the same
way as a baseline. Nothing here asserts a time.

    python benchmarks/rest_latency.py --concurrency 100 --rounds 5
"""
from __future__ import annotations

import argparse
import asyncio
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TOKEN = "tf_benchmark_read_token_0123456789"
DEVICE = "cpu-x86_64-avx2-2c"
PARAMS = {"M": 512, "N": 512, "K": 512, "dtype": "float32"}
FINGERPRINT = {"kind": "cpu", "model": "bench", "arch": "x86_64", "isa_flags": ["avx2"], "compute_units": 2}


def fingerprint() -> dict:
    """A CPU agent's fingerprint with the compiler target it registers (the class keys the head)."""
    import compiler_core as cc

    return {**FINGERPRINT, "target": cc.cpu_target(isa="avx2", cores=2).to_dict()}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--concurrency", type=int, default=100, help="requests fired at once (and in flight at most)")
    p.add_argument("--rounds", type=int, default=5, help="measured rounds (after one warm-up round)")
    p.add_argument("--db-slots", type=int, default=None,
                   help="create_app's max_db_requests (requests holding a session at once); default: the app's")
    p.add_argument("--serve", nargs=3, metavar=("DATABASE_URL", "PORT", "SLOTS"), help=argparse.SUPPRESS)
    return p.parse_args(argv)


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
    engine.dispose()


def serve(url: str, port: int, slots: int | None) -> None:
    """Child process: the app under uvicorn on 127.0.0.1:port (no driver: nothing is tuned here)."""
    import uvicorn

    from tuner_server.api.app import create_app
    from tuner_server.db import make_engine, make_session_factory
    from tuner_server.settings import Settings

    settings = Settings(database_url=url)
    extra = {} if slots is None else {"max_db_requests": slots}
    app = create_app(settings, make_session_factory(make_engine(url)), None, **extra)
    uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)).run()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def one(client, path: str, headers: dict, sem: asyncio.Semaphore) -> float | str:
    """The latency in seconds, or what went wrong (a failed request is counted, not timed)."""
    import httpx

    async with sem:
        t0 = time.perf_counter()
        try:
            response = await client.get(path, headers=headers)
        except httpx.HTTPError as exc:
            return f"{type(exc).__name__}: {exc}"
        elapsed = time.perf_counter() - t0
    return elapsed if response.status_code == 200 else f"HTTP {response.status_code}: {response.text[:200]}"


async def load(base: str, path: str, headers: dict, concurrency: int, rounds: int) -> list[tuple[float, list]]:
    """(wall seconds, per-request results) for a warm-up round and then `rounds` measured rounds."""
    import httpx

    # idle connections are dropped before uvicorn's 5 s keep-alive timeout closes them under a reused request
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency, keepalive_expiry=2)
    sem = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=60) as client:
        results = []
        for _ in range(rounds + 1):
            t0 = time.perf_counter()
            batch = await asyncio.gather(*(one(client, path, headers, sem) for _ in range(concurrency)))
            results.append((time.perf_counter() - t0, batch))
        return results


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def report(name: str, results: list[tuple[float, list]]) -> None:
    """One line per measured round (the warm-up round is dropped) and one over all of them, in milliseconds."""
    print(f"\n{name}")
    failures = [x for _, batch in results for x in batch if isinstance(x, str)]
    if failures:
        print(f"  {len(failures)} request(s) failed (warm-up included), e.g. {failures[0]}")
    print(f"  {'round':>5} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'req/s':>7}")
    every, p50s = [], []
    for i, (wall, batch) in enumerate(results[1:], 1):
        ok = [x for x in batch if not isinstance(x, str)]
        if not ok:
            print(f"  {i:>5} (every request failed)")
            continue
        every += ok
        p50s.append(percentile(ok, 50) * 1e3)
        print(f"  {i:>5} {p50s[-1]:8.1f} {percentile(ok, 99) * 1e3:8.1f} {max(ok) * 1e3:8.1f} {len(ok) / wall:7.0f}")
    if every:
        print(f"  {'all':>5} {percentile(every, 50) * 1e3:8.1f} {percentile(every, 99) * 1e3:8.1f} "
              f"{max(every) * 1e3:8.1f}         (n={len(every)}; round p50s {min(p50s):.1f}-{max(p50s):.1f} ms)")


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.serve:
        serve(args.serve[0], int(args.serve[1]), None if args.serve[2] == "default" else int(args.serve[2]))
        return 0
    with tempfile.TemporaryDirectory(prefix="tunefarm-bench-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'farm.db'}"
        seed(url)
        port = free_port()
        env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        slots = str(args.db_slots or "default")
        child = subprocess.Popen([sys.executable, __file__, "--serve", url, str(port), slots], env=env)
        try:
            base = f"http://127.0.0.1:{port}"
            wait_ready(base, child)
            query = "&".join(f"{k}={v}" for k, v in PARAMS.items())
            best = f"/v1/best?op=matmul&{query}&device={DEVICE}"
            print(f"uvicorn (1 process) on {base}, SQLite, python {platform.python_version()}, "
                  f"{len(os.sched_getaffinity(0))} CPUs, db slots {slots}; {args.concurrency} concurrent requests "
                  f"x {args.rounds} rounds (+1 warm-up)")
            report(f"GET {best}", asyncio.run(load(base, best, {"Authorization": f"Bearer {TOKEN}"},
                                                         args.concurrency, args.rounds)))
            report("GET /health (baseline: no token check, one SELECT 1)",
                   asyncio.run(load(base, "/health", {}, args.concurrency, args.rounds)))
        finally:
            child.terminate()
            child.wait(timeout=10)
    return 0


def wait_ready(base: str, child: subprocess.Popen, timeout_s: float = 30) -> None:
    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise RuntimeError(f"the server exited with {child.returncode}")
        try:
            if httpx.get(base + "/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"the server did not answer /health within {timeout_s} s")


if __name__ == "__main__":
    sys.exit(main())
