"""create_app(settings, session_factory, driver) -> FastAPI: the tuner's REST API (OpenAPI at /docs).

Routes live in `routes/` (one module per resource) and call repository functions; `deps.py` gives them a session
per request and checks bearer tokens; `errors.py` turns every failure into {"error", "detail"}. `docs.py` serves
/docs and /redoc and `dashboard.py` the dashboard, both from files in the installed packages (no CDN).
"""
from __future__ import annotations

import asyncio
import weakref
from typing import Any

from fastapi import FastAPI
from prometheus_client import CollectorRegistry, Histogram
from sqlalchemy.orm import Session, sessionmaker

from tuner_server import metrics
from tuner_server.api.dashboard import install_dashboard
from tuner_server.api.docs import install_docs
from tuner_server.api.errors import METHOD_NOT_ALLOWED, install_error_handlers
from tuner_server.api.head_cache import HeadCache
from tuner_server.api.hot_heads import HotHeads
from tuner_server.api.middleware import BodySizeLimit, HeadAsGet, RequestTimer
from tuner_server.api.routes import ROUTERS
from tuner_server.api.schemas import ErrorBody
from tuner_server.db import read_only_sessions
from tuner_server.settings import Settings
from tuner_server.strict_json import MAX_DEPTH, MAX_NUMBER_CHARS

DESCRIPTION = f"""A kernel-autotuning farm. Submit a job (op, params, device, trial budget); agents measure the
configs the search proposes; the fastest verified schedule of each (workload, device class) is kept under version
control. Every endpoint except /health, /docs, /redoc and the dashboard's page (/dashboard, which asks for a token
and sends it) needs `Authorization: Bearer <token>`: scope `read` for GETs, `admin` for writes. Errors are JSON
`{{"error": "...", "detail": ...}}`.

Input is read strictly. HEAD is served wherever GET is. A JSON body is sent as `Content-Type: application/json` in
UTF-8 (else 415) and is strict JSON (else 400 saying why): no NaN or Infinity, number literals of at most
{MAX_NUMBER_CHARS} characters, at most {MAX_DEPTH} levels of arrays and objects, no key twice in an object, no NUL
or lone UTF-16 surrogate in a string. A query string gives each parameter at most once (no parameter is a list: a
repeated one is a 422 naming it), only the parameters the operation lists (an unknown one is a 422 listing those
allowed), and integers as plain decimal digits (`64`, not `64.0`, `+64`, `064` or `6_4`); an op's integer param in a
JSON body is a JSON number (`64`, not `"64"`). Wherever a device class is asked for on /v1/best*, `cpu` or `cuda`
names this farm's class of that kind (the only one, else the only one online)."""
# Requests holding a database session at once: below the engine's pool (db/engine.py: 20 + 10 overflow) and AnyIO's 40
# worker threads, so a request holding a connection always finds a worker for its next step (see deps.get_db).
MAX_DB_REQUESTS = 10
LATENCY_BUCKETS = metrics.LATENCY_BUCKETS


_LATENCY: weakref.WeakKeyDictionary[CollectorRegistry, Histogram] = weakref.WeakKeyDictionary()


def request_latency_observer(registry: CollectorRegistry):
    """REST request latency by method, route template and status, as a histogram on `registry` (registered once
    per registry, however many apps share it)."""
    if registry not in _LATENCY:
        _LATENCY[registry] = Histogram("tunefarm_http_request_duration_seconds", "REST request latency",
                                       ("method", "route", "status"), registry=registry, buckets=LATENCY_BUCKETS)
    histogram = _LATENCY[registry]

    def observe(method: str, route: str, status: int, seconds: float) -> None:
        histogram.labels(method, route, str(status)).observe(seconds)

    return observe


def create_app(settings: Settings, session_factory: sessionmaker[Session], driver: Any, *,
               registry: CollectorRegistry | None = None, max_db_requests: int = MAX_DB_REQUESTS,
               leadership: Any = None) -> FastAPI:
    """The app over `session_factory`'s database.

    `driver`: anything with `wake()` (the JobDriver), called after a job is created or cancelled; or None.
    `registry`: what GET /metrics shows; default tuner_server.metrics.REGISTRY, the process-wide registry the
    driver and gRPC count on (tests may pass their own). `max_db_requests`: requests holding a session at once
    (keep it below the engine's pool size plus overflow, see deps.get_db). `leadership`: anything with `role` and
    `replica` (tuner_server.leadership), shown by /health; None: /health shows no role."""
    app = FastAPI(title="tunefarm", version="0.1.0", description=DESCRIPTION, docs_url=None, redoc_url=None)
    app.state.settings = settings
    app.state.session_factory = session_factory
    app.state.read_session_factory = read_only_sessions(session_factory)
    app.state.head_cache = HeadCache()
    app.state.driver = driver
    app.state.leadership = leadership
    app.state.db_slots = asyncio.Semaphore(max_db_requests)
    app.state.metrics_registry = registry if registry is not None else metrics.REGISTRY
    install_error_handlers(app)
    for router in ROUTERS:  # any route that reads the database answers 503 while it is down (api/errors.py)
        app.include_router(router, responses={**METHOD_NOT_ALLOWED, 503: {
            "model": ErrorBody, "description": "the database is unreachable or busy: retry after the Retry-After "
                                               "seconds"}})
    install_docs(app)
    install_dashboard(app)
    app.add_middleware(HotHeads, state=app.state)  # inside RequestTimer: its answers are timed like the route's
    app.add_middleware(HeadAsGet)  # outside HotHeads: a HEAD of a kept head is answered from it too
    app.add_middleware(RequestTimer, observe=request_latency_observer(app.state.metrics_registry))
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_request_bytes)
    return app
