"""TUNEFARM_METRICS_PORT: the tuner's metrics on a listener of their own, without a token (default off)."""
from __future__ import annotations

import socket

import httpx
import pytest

from tuner_server import metrics
from tuner_server.settings import Settings


def test_metrics_listener_serves_the_registry_without_a_token():
    assert Settings(_env_file=None).metrics_port is None  # off unless asked for
    metrics.AGENTS_LOST.inc(0)
    server = metrics.serve("127.0.0.1", 0)
    try:
        response = httpx.get(f"http://127.0.0.1:{server.server_port}/metrics", timeout=10)
        assert response.status_code == 200 and "tunefarm_agents_lost" in response.text
    finally:
        server.shutdown()
        server.server_close()


def test_a_taken_metrics_port_is_one_clear_error():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(OSError, match=r"cannot listen for metrics on 127\.0\.0\.1:\d+"):
            metrics.serve("127.0.0.1", taken.getsockname()[1])
