"""ASGI middleware: GET /v1/best of a head whose answer is kept (api/head_cache.py) is answered before routing.

The hot read of a farm: clients ask for the same heads again and again. When the request asks for a head (no
version= or as_of=), its token is valid and the kept answer was made for the key's current head version, the answer
is sent from here after one worker-thread step (the token and the head version: one statement, repo/hot_reads.py,
on PostgreSQL in autocommit): no FastAPI routing, dependency solving or second thread hop, which cost more than the
read. A query string already seen is not parsed again (`_hot_key`, an LRU of what its parse gave). Anything
else - no kept answer yet, bad params, a missing or invalid token, a database error - goes on to the route
unchanged, which answers it as always (and keeps the answer for next time). The query is parsed by the route's own
model (BestQuery), so both read it alike.
"""
from __future__ import annotations

import functools
import logging

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers, QueryParams
from starlette.types import ASGIApp, Receive, Scope, Send

from tuner_server.api.head_cache import kept_key
from tuner_server.api.op_query import BestQuery
from tuner_server.api.query_rules import check_query, rules_of
from tuner_server.db.engine import statement_engine
from tuner_server.repo.hot_reads import token_and_head

log = logging.getLogger(__name__)

PATH = "/v1/best"
PARSED_QUERIES = 4096  # distinct query strings whose parse is kept
QUERY_RULES = rules_of(BestQuery.model_json_schema()["properties"])  # the route's (api/query_rules.py)


class _Route:
    path = PATH  # what RequestTimer labels the request with, as for the route


class HotHeads:
    def __init__(self, app: ASGIApp, state) -> None:
        self.app, self.state = app, state  # state: the FastAPI app's state (sessions, slots, head_cache)
        self.engine = statement_engine(state.session_factory)  # one statement: no transaction needed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = None
        if scope["type"] == "http" and scope["method"] == "GET" and scope["path"] == PATH:
            try:
                body = await self._kept(scope)
            except Exception:  # noqa: BLE001 - the route answers whatever went wrong here (and says what)
                log.debug("hot head lookup failed; the route answers", exc_info=True)
        if body is None:
            await self.app(scope, receive, send)
            return
        scope["route"] = _Route()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    async def _kept(self, scope: Scope) -> bytes | None:
        scheme, _, token = (Headers(scope=scope).get("authorization") or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        key = _hot_key(scope.get("query_string", b""))
        if key is None:
            return None
        async with self.state.db_slots:
            return await run_in_threadpool(self._lookup, token.strip(), key)

    def _lookup(self, token: str, key: tuple) -> bytes | None:
        with self.engine.connect() as connection:
            found = token_and_head(token, key[0], key[1], connection=connection)
        if found.scope is None or found.head_version is None:
            return None
        return self.state.head_cache.get(key, found.head_version)


@functools.lru_cache(maxsize=PARSED_QUERIES)
def _hot_key(query_string: bytes) -> tuple | None:
    """The kept answer's key a query asks for, parsed as the route parses it (its 422s raise, and are not kept);
    None when it asks for something else (a version, a time, a prediction)."""
    params = QueryParams(query_string)
    check_query(params, QUERY_RULES)
    query = BestQuery.model_validate(dict(params))
    if query.version is not None or query.as_of is not None or query.predict or query.enqueue:
        return None
    return kept_key(query.workload().key, query.device, query.include_source)
