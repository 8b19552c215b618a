"""A real uvicorn server on loopback answers 100 concurrent authenticated reads, all of them, over SQLite.

Regression: a request holds its connection (and SQLite's write lock) across FastAPI's worker-thread steps; before
the app bounded the requests holding a session (deps.get_db), 100 at once exhausted the pool and the workers and
failed after SQLAlchemy's 30 s pool timeout. Nothing here asserts a time.
"""
from __future__ import annotations

import asyncio
import threading
import time

import httpx
import pytest
import uvicorn

from tests.cpu.rest_support import MATMUL_QUERY, READER, seed
from tests.ports import free_port
from tuner_server.api.app import create_app
from tuner_server.db import make_engine, make_session_factory, upgrade_to_head
from tuner_server.settings import Settings


@pytest.fixture
def server(tmp_path):
    url = f"sqlite:///{tmp_path / 'farm.db'}"
    upgrade_to_head(url)
    engine = make_engine(url)
    factory = make_session_factory(engine)
    seed(factory)
    port = free_port()
    app = create_app(Settings(database_url=url), factory, None)
    uv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False))
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not uv.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    uv.should_exit = True
    thread.join(timeout=10)
    engine.dispose()


async def _burst(base: str, paths: list[str]) -> list[int]:
    limits = httpx.Limits(max_connections=len(paths), keepalive_expiry=2)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=120) as client:
        headers = {"Authorization": f"Bearer {READER}"}
        responses = await asyncio.gather(*(client.get(p, headers=headers) for p in paths))
    return [r.status_code for r in responses]


def test_100_concurrent_reads_all_succeed(server):
    paths = [f"/v1/best?{MATMUL_QUERY}"] * 80 + ["/v1/jobs"] * 10 + ["/health"] * 10
    statuses = asyncio.run(_burst(server, paths))
    assert statuses == [200] * len(paths)
