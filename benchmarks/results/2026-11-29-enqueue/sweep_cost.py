"""The driver's sweep with nothing due, as it is (a read first) and as it was (a write transaction), interleaved.

Usage: python3 benchmarks/results/2026-11-29-enqueue/sweep_cost.py [ROUNDS]
"""
from __future__ import annotations

import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import compiler_core as cc  # noqa: E402
from tuner_server import repo  # noqa: E402
from tuner_server.db import make_engine, make_session_factory, session_scope, upgrade_to_head, utcnow  # noqa: E402
from tuner_server.driver import JobDriver, TickSummary  # noqa: E402
from tuner_server.repo import JobSpec, pass_reads  # noqa: E402
from tuner_server.settings import Settings  # noqa: E402

CPU = {"kind": "cpu", "model": "bench", "arch": "x86_64", "isa_flags": ["avx2"], "compute_units": 2,
       "target": cc.cpu_target(isa="avx2", cores=2).to_dict()}


def write_first_sweep(sessions, now) -> None:
    """The sweep before 8b4d132: everything in one write transaction."""
    with session_scope(sessions) as s:
        repo.requeue_expired(session=s, now=now, max_attempts=3)
        repo.mark_lost_agents(session=s, lost_after_s=30, now=now, max_attempts=3)
        pass_reads.job_state_counts(s.connection())


def main(rounds: int) -> None:
    url = f"sqlite:///{tempfile.mkdtemp()}/tf.db"
    upgrade_to_head(url)
    sessions = make_session_factory(make_engine(url))
    with session_scope(sessions) as s:
        agent = repo.register_agent(CPU, "bench", cc.codegen_version(), session=s).agent.id
        repo.create_job(JobSpec("matmul(M=64,N=64,K=64,dtype=float32)", "cpu", 100), session=s)
    driver = JobDriver(sessions, Settings(database_url=url))
    driver.tick()
    with session_scope(sessions) as s:
        repo.lease_tasks(agent, 4, session=s)  # leases held, none expired
    times = {"read first": [], "write transaction": []}
    for i in range(rounds):
        now = utcnow()
        driver._first_tick = now - timedelta(seconds=100)  # past the restart grace: silent agents are looked for
        for name in sorted(times, reverse=bool(i % 2)):
            t0 = time.perf_counter()
            driver._sweep(now, TickSummary()) if name == "read first" else write_first_sweep(sessions, now)
            times[name].append(time.perf_counter() - t0)
        with session_scope(sessions) as s:
            repo.lease_tasks(agent, 0, session=s)  # the agent speaks: nobody falls silent
    for name, seconds in times.items():
        print(f"{name}: median {1e3 * statistics.median(seconds):.3f} ms over {rounds} sweeps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 400)
