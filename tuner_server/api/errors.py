"""Every error leaves the API as JSON {"error": "...", "detail": ...} with a 4xx/5xx status.

Repository errors map to statuses (NotFound 404, InvalidRequest 422, Conflict 409); compiler_core's WorkloadError
and ConfigError are 422; a body that is not JSON is 400 with the parser's message; schema violations are 422 with
one line per field. A database that is down or busy is 503 with Retry-After (db/availability.py), answered on the
same keep-alive connection and logged once per outage, not once per request; any other database error is a bug (500).
"""
from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException as StarletteHTTPException

import compiler_core as cc
from tuner_server.db.availability import BUSY, OUTAGE, RETRY_AFTER_S, reason, unavailable
from tuner_server.repo import Conflict, ImportFormatError, InvalidRequest, NotFound, RepoError

log = logging.getLogger(__name__)


class ApiError(Exception):
    """An error the API reports as is: `status`, a one-line `error`, optional `detail`, optional headers."""

    def __init__(self, status: int, error: str, detail: Any = None, headers: dict[str, str] | None = None):
        super().__init__(error)
        self.status, self.error, self.detail, self.headers = status, error, detail, headers


def error_response(status: int, error: str, detail: Any = None, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": error, "detail": jsonable_encoder(detail)}, status_code=status, headers=headers)


def _repo_status(exc: RepoError) -> int:
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, Conflict):
        return 409
    return 422 if isinstance(exc, InvalidRequest) else 500


def _field_problems(errors: list[dict]) -> list[dict[str, Any]]:
    """pydantic's errors without the echoed input (it may be large): where, what, and the allowed bounds."""
    out = []
    for e in errors:
        item = {"loc": ".".join(str(part) for part in e.get("loc", ())), "msg": e.get("msg", ""), "type": e["type"]}
        if e.get("ctx"):
            item["ctx"] = {k: str(v) for k, v in e["ctx"].items()}
        out.append(item)
    return out


async def _on_api_error(_request: Request, exc: ApiError) -> JSONResponse:
    return error_response(exc.status, exc.error, exc.detail, exc.headers)


async def _on_repo_error(_request: Request, exc: RepoError) -> JSONResponse:
    detail = exc.problems if isinstance(exc, ImportFormatError) else None
    return error_response(_repo_status(exc), str(exc), detail)


async def _on_compiler_error(_request: Request, exc: Exception) -> JSONResponse:
    return error_response(422, str(exc))


async def _on_validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
    problems = _field_problems(list(exc.errors()))
    bad_json = [p for p in problems if p["type"] == "json_invalid"]
    if bad_json:
        ctx = bad_json[0].get("ctx", {})
        return error_response(400, f"malformed JSON body: {ctx.get('error', bad_json[0]['msg'])}", bad_json)
    summary = "; ".join(f"{p['loc']}: {p['msg']}" for p in problems[:5])
    return error_response(422, f"invalid request: {summary}", problems)


async def _on_http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
    return error_response(exc.status_code, str(exc.detail), getattr(exc, "extra_detail", None),
                          getattr(exc, "headers", None))


def unavailable_response(kind: str) -> JSONResponse:
    """503 for a database that is down (OUTAGE) or busy (BUSY), telling the client when to try again."""
    wait = RETRY_AFTER_S[kind]
    state = "unreachable" if kind == OUTAGE else "busy"
    return error_response(503, f"the database is {state}; retry after {wait} s", {"retry_after_s": wait},
                          headers={"Retry-After": str(wait)})


async def _on_database_error(_request: Request, exc: SQLAlchemyError) -> JSONResponse:
    kind = unavailable(exc)
    if kind is None:
        raise exc  # not the database's state: a bug, answered and logged (with its traceback) as one
    if kind == BUSY:
        log.warning("database busy, answered 503: %s", reason(exc))
    return unavailable_response(kind)


async def _on_unexpected(_request: Request, exc: Exception) -> JSONResponse:
    """The body for a bug; Starlette re-raises the exception after sending it, so the server logs the traceback."""
    return error_response(500, f"internal error: {type(exc).__name__}")


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ApiError, _on_api_error)
    app.add_exception_handler(RepoError, _on_repo_error)
    app.add_exception_handler(cc.WorkloadError, _on_compiler_error)
    app.add_exception_handler(cc.ConfigError, _on_compiler_error)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)
    app.add_exception_handler(SQLAlchemyError, _on_database_error)
    app.add_exception_handler(Exception, _on_unexpected)
