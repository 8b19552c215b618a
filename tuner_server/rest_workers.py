"""More processes answering REST on the tuner's one port (TUNEFARM_REST_WORKERS > 1, PostgreSQL only).

One Python process answers REST on one core at a time (the GIL), whatever its thread pool; reads that pile up queue
behind each other's Python. With `rest_workers` = N the tuner binds the REST socket itself, serves it as before, and
starts N - 1 worker processes that accept on the same socket (the kernel hands each connection to one of them). A
worker runs the REST app only, over its own engine: no driver (a job it creates waits for the driver's next pass,
at most its interval), no gRPC. It stops when the tuner stops it (SIGTERM, as uvicorn handles it) or when the tuner
is gone (its parent changes). /metrics shows the metrics of the process that answers; scrape TUNEFARM_METRICS_PORT
(the tuner's own process: gRPC, driver) for the farm's. SQLite keeps one process: its writers serialise across
processes on the file lock, so more processes only wait for each other.
"""
from __future__ import annotations

import importlib
import logging
import multiprocessing as mp
import os
import socket
import threading
import time

from tuner_server.rpc.server import listen_address

log = logging.getLogger(__name__)

PARENT_POLL_S = 1.0
STOP_GRACE_S = 10.0


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0: any free one), shared with the workers."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen for REST on {listen_address(host, port)}: {exc.strerror}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def start(settings, sock: socket.socket, count: int, plugins: tuple[str, ...] = ()) -> list[mp.process.BaseProcess]:
    """Start `count` worker processes serving REST on `sock`."""
    context = mp.get_context("spawn")
    workers = []
    for i in range(count):
        worker = context.Process(target=serve, args=(settings, sock, plugins, os.getpid()),
                                 name=f"tunefarm-rest-{i + 1}", daemon=False)
        worker.start()
        workers.append(worker)
    log.info("%d REST worker process(es) started: %s", count, ", ".join(str(w.pid) for w in workers))
    return workers


def stop(workers: list[mp.process.BaseProcess], grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM each, wait up to `grace_s` for all, then SIGKILL the rest."""
    for worker in workers:
        if worker.is_alive():
            worker.terminate()
    deadline = time.monotonic() + grace_s
    for worker in workers:
        worker.join(max(0.1, deadline - time.monotonic()))
        if worker.is_alive():
            worker.kill()
            worker.join(5)


def serve(settings, sock: socket.socket, plugins: tuple[str, ...], parent_pid: int) -> None:
    """A worker process: the REST app on `sock` until SIGTERM or until the tuner (its parent) is gone."""
    import uvicorn

    from tuner_server import metrics
    from tuner_server.api.app import create_app
    from tuner_server.db import make_engine, make_session_factory

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for module in plugins:  # the ops the tuner knows, so the worker validates workloads alike
        importlib.import_module(module)
    engine = make_engine(settings.database_url)
    app = create_app(settings, make_session_factory(engine), None, registry=metrics.REGISTRY)
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, lifespan="on", timeout_graceful_shutdown=5))

    def watch_parent() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_POLL_S)
        server.should_exit = True

    threading.Thread(target=watch_parent, name="parent-watch", daemon=True).start()
    try:
        server.run(sockets=[sock])
    finally:
        engine.dispose()
