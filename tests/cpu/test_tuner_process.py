"""`python -m tuner_server` as a real process: it migrates, serves gRPC health (and REST when tuner_server.api is
there) on loopback, and exits 0 on SIGTERM with every thread stopped."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

REPO = Path(__file__).resolve().parents[2]


def wait_for_line(log: Path, pattern: str, proc: subprocess.Popen, timeout_s: float = 60) -> re.Match:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if match := re.search(pattern, log.read_text()):
            return match
        if proc.poll() is not None:
            pytest.fail(f"server exited early ({proc.returncode}):\n{log.read_text()[-4000:]}")
        time.sleep(0.1)
    pytest.fail(f"no {pattern!r} in the log after {timeout_s} s:\n{log.read_text()[-4000:]}")


@contextmanager
def tuner_process(tmp_path: Path, database_url: str, **env: str) -> Iterator[tuple[subprocess.Popen, Path]]:
    """`python -m tuner_server` on `database_url` with free ports and `env` added, logging to a file; killed on exit
    if still running."""
    log = tmp_path / "server.log"
    env = {**os.environ, "TUNEFARM_ENROLMENT_TOKEN": "process-test-token", **env}
    cmd = [sys.executable, "-m", "tuner_server", "--database-url", database_url,
           "--data-dir", str(tmp_path / "data"), "--grpc-port", "0", "--rest-port", "0"]
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
    try:
        yield proc, log
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_server_process_serves_health_and_stops_cleanly_on_sigterm(tmp_path):
    with tuner_process(tmp_path, f"sqlite:///{tmp_path / 'tf.db'}",
                       TUNEFARM_ADMIN_TOKEN="process-admin-token") as (proc, log):
        port = int(wait_for_line(log, r"gRPC listening on 127\.0\.0\.1:(\d+)", proc)[1])
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            health = health_pb2_grpc.HealthStub(channel)
            assert health.Check(health_pb2.HealthCheckRequest(), timeout=10).status == \
                health_pb2.HealthCheckResponse.SERVING
        if (REPO / "tuner_server" / "api" / "app.py").exists():
            rest = int(wait_for_line(log, r"REST listening on http://127\.0\.0\.1:(\d+)", proc)[1])
            with urllib.request.urlopen(f"http://127.0.0.1:{rest}/health", timeout=10) as response:
                assert response.status == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, log.read_text()[-4000:]
    assert "tuner stopped" in log.read_text()
    assert "process-admin-token" not in log.read_text()


def test_rest_workers_answer_on_the_tuners_port_and_stop_with_it(tmp_path, pg_cluster):
    """TUNEFARM_REST_WORKERS=2 on PostgreSQL: with the tuner's own process stopped (SIGSTOP), the worker process
    still answers on the one port; SIGTERM to the tuner stops the worker too."""
    from tests.db.pg_cluster import create_database

    with tuner_process(tmp_path, create_database(pg_cluster, "rest_workers"),
                       TUNEFARM_REST_WORKERS="2") as (proc, log):
        worker = int(wait_for_line(log, r"1 REST worker process\(es\) started: (\d+)", proc)[1])
        rest = int(wait_for_line(log, r"REST listening on http://127\.0\.0\.1:(\d+)", proc)[1])
        deadline = time.monotonic() + 60
        proc.send_signal(signal.SIGSTOP)
        try:
            while True:  # the worker may still be importing: retry until it answers
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{rest}/health", timeout=5) as response:
                        assert response.status == 200
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
        finally:
            proc.send_signal(signal.SIGCONT)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, log.read_text()[-4000:]
    deadline = time.monotonic() + 10
    while Path(f"/proc/{worker}").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not Path(f"/proc/{worker}").exists(), f"REST worker {worker} outlived the tuner"
