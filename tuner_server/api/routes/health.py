"""GET /health: no auth; 200 when the database answers, 503 when it does not; says whether this replica leads."""
from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from sqlalchemy import select
from starlette.concurrency import run_in_threadpool

import compiler_core as cc
from tuner_server.api.errors import documented, error_response
from tuner_server.api.json_body import StrictJSONRoute
from tuner_server.api.schemas import Health
from tuner_server.db import session_scope
from tuner_server.db.availability import OUTAGE, RETRY_AFTER_S, unavailable

router = APIRouter(tags=["health"], route_class=StrictJSONRoute)


def _ping(factory) -> None:
    with session_scope(factory) as session:
        session.scalar(select(1))


@router.get("/health", response_model=Health, responses=documented(503))
async def health(request: Request) -> Health | JSONResponse:
    """Takes one of the app's database slots like any request (see deps.get_db), so it also shows overload."""
    try:
        async with request.app.state.db_slots:
            await run_in_threadpool(_ping, request.app.state.read_session_factory)
    except Exception as exc:  # any failure to reach the database is the answer, not a crash
        wait = RETRY_AFTER_S[unavailable(exc) or OUTAGE]
        return error_response(503, f"database unreachable: {type(exc).__name__}: {exc}"[:500],
                              {"retry_after_s": wait}, headers={"Retry-After": str(wait)})
    leadership = request.app.state.leadership
    return Health(status="ok", database="ok", codegen_version=cc.codegen_version(),
                  role=getattr(leadership, "role", None), replica=getattr(leadership, "replica", None))
