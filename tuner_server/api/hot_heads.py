"""ASGI middleware: GET /v1/best of a head whose answer is kept (api/head_cache.py) is answered before routing.

The hot read of a farm: clients ask for the same heads again and again. When the request asks for a head (no
version= or as_of=), its token is valid and the kept answer was made for the key's current head version, the answer
is sent from here after one worker-thread step (the token and the head version: two indexed reads, on PostgreSQL
in autocommit): no FastAPI routing, dependency solving or second thread hop, which cost more than the reads. Anything
else - no kept answer yet, bad params, a missing or invalid token, a database error - goes on to the route
unchanged, which answers it as always (and keeps the answer for next time). The query is parsed by the route's own
model (BestQuery), so both read it alike.
"""
from __future__ import annotations

import logging

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from tuner_server import repo
from tuner_server.api.head_cache import kept_key
from tuner_server.api.op_query import BestQuery, reject_repeated
from tuner_server.db import session_scope
from tuner_server.db.engine import statement_reads
from tuner_server.repo import schedules

log = logging.getLogger(__name__)

PATH = "/v1/best"


class _Route:
    path = PATH  # what RequestTimer labels the request with, as for the route


class HotHeads:
    def __init__(self, app: ASGIApp, state) -> None:
        self.app, self.state = app, state  # state: the FastAPI app's state (sessions, slots, head_cache)
        self.sessions = statement_reads(state.session_factory)  # two one-statement reads: no transaction needed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = None
        if scope["type"] == "http" and scope["method"] == "GET" and scope["path"] == PATH:
            try:
                body = await self._kept(Request(scope))
            except Exception:  # noqa: BLE001 - the route answers whatever went wrong here (and says what)
                log.debug("hot head lookup failed; the route answers", exc_info=True)
        if body is None:
            await self.app(scope, receive, send)
            return
        scope["route"] = _Route()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    async def _kept(self, request: Request) -> bytes | None:
        scheme, _, token = (request.headers.get("authorization") or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        reject_repeated(request)
        query = BestQuery.model_validate(dict(request.query_params))  # as the route reads it (422s raise)
        if query.version is not None or query.as_of is not None or query.predict or query.enqueue:
            return None
        key = kept_key(query.workload().key, query.device, query.include_source)
        async with self.state.db_slots:
            return await run_in_threadpool(self._lookup, token.strip(), key)

    def _lookup(self, token: str, key: tuple) -> bytes | None:
        with session_scope(self.sessions) as session:
            if repo.authenticate_token(token, session=session) is None:
                return None
            current = schedules.head_version(key[0], key[1], session=session)
        return self.state.head_cache.get(key, current) if current is not None else None
