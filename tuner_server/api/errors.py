"""Every error leaves the API as JSON {"error": "...", "detail": ...} with a 4xx/5xx status.

Repository errors map to statuses (NotFound 404, InvalidRequest 422, Conflict 409); compiler_core's WorkloadError
and ConfigError are 422; a body that is not strict JSON is 400 with the reader's message (api/json_body.py), one not
sent as application/json 415; schema violations are 422 with one line per field; a 405's Allow header lists every
method the path takes. The body is rendered so that nothing echoed can break it: a lone surrogate in a string is
written as its escape's text, a non-finite float as its name (ErrorJSON). A database that is down or busy is 503
with Retry-After (db/availability.py), answered on the same keep-alive connection and logged once per outage, not
once per request; any other database error is a bug (500). `documented(...)` declares the body sent (ErrorBody) for a
route's error statuses, so the OpenAPI shows what is sent.
"""
from __future__ import annotations

import json
import logging
import math
import re
import typing
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException as StarletteHTTPException

import compiler_core as cc
from tuner_server.api.schemas import ErrorBody
from tuner_server.db.availability import BUSY, OUTAGE, RETRY_AFTER_S, reason, unavailable
from tuner_server.repo import Conflict, ImportFormatError, InvalidRequest, NotFound, RepoError
from tuner_server.strict_json import MAX_DEPTH, MAX_NUMBER_CHARS

log = logging.getLogger(__name__)
MEANINGS = {400: f"malformed body: not UTF-8, not JSON, or JSON the server refuses (NaN, Infinity, a number of over "
                 f"{MAX_NUMBER_CHARS} characters, nesting over {MAX_DEPTH} levels, a key given twice, NUL or a lone "
                 "surrogate in a string)",
            401: "missing, unknown or revoked bearer token",
            403: "this needs an admin token", 404: "not found", 409: "the current state forbids it",
            413: "request body over the server's max_request_bytes",
            415: "a JSON body sent without 'Content-Type: application/json' (UTF-8)",
            422: "a field is out of its bounds or inconsistent: `error` names it, `detail` lists every problem",
            503: "the database is down or busy: retry after Retry-After seconds"}


METHOD_NOT_ALLOWED = {405: {"model": ErrorBody, "description": "this method is not served at this path; the `Allow` "
                                                          "header lists those that are (HEAD wherever GET is)",
                              "headers": {"Allow": {"description": "every method of the path, e.g. 'GET, HEAD, POST'",
                                                    "schema": {"type": "string"}}}}}


def documented(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The `responses=` of a route whose errors are `statuses`, plus 503 (every route reads the database, if only
    to check its token): each with ErrorBody (FastAPI's own 422 body, HTTPValidationError, is never sent: see
    _on_validation_error)."""
    return {status: {"model": ErrorBody, "description": MEANINGS[status]} for status in (*statuses, 503)}


class ApiError(Exception):
    """An error the API reports as is: `status`, a one-line `error`, optional `detail`, optional headers."""

    def __init__(self, status: int, error: str, detail: Any = None, headers: dict[str, str] | None = None):
        super().__init__(error)
        self.status, self.error, self.detail, self.headers = status, error, detail, headers


def printable(value: Any) -> Any:
    """`value` (jsonable) with every string encodable as UTF-8 (a lone surrogate becomes the text of its escape,
    '\\ud800') and every non-finite float replaced by its name: what an error echoes can never fail to render."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {printable(k): printable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [printable(v) for v in value]
    return value


class ErrorJSON(JSONResponse):
    """The error body; it renders whatever it is given (see `printable`)."""

    def render(self, content: Any) -> bytes:
        return json.dumps(printable(content), ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


def error_response(status: int, error: str, detail: Any = None, headers: dict[str, str] | None = None) -> JSONResponse:
    return ErrorJSON({"error": error, "detail": jsonable_encoder(detail)}, status_code=status, headers=headers)


def _repo_status(exc: RepoError) -> int:
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, Conflict):
        return 409
    return 422 if isinstance(exc, InvalidRequest) else 500


def _field_problems(errors: list[dict]) -> list[dict[str, Any]]:
    """pydantic's errors: where, what, the allowed bounds, and the value given when it is a short scalar (a large
    input is not echoed)."""
    out = []
    for e in errors:
        item = {"loc": ".".join(str(part) for part in e.get("loc", ())), "msg": e.get("msg", ""), "type": e["type"]}
        if e.get("ctx"):
            item["ctx"] = {k: str(v) for k, v in e["ctx"].items()}
        given = e.get("input")
        if isinstance(given, str | int | float | bool) and len(repr(given)) <= 80 and e["type"] != "missing":
            item["input"] = given
        out.append(item)
    return out


def _line(problem: dict[str, Any]) -> str:
    given = f" (got {problem['input']!r})" if "input" in problem else ""
    return f"{problem['loc']}: {problem['msg']}{given}"


async def _on_api_error(_request: Request, exc: ApiError) -> JSONResponse:
    return error_response(exc.status, exc.error, exc.detail, exc.headers)


async def _on_repo_error(_request: Request, exc: RepoError) -> JSONResponse:
    detail = exc.problems if isinstance(exc, ImportFormatError) else None
    return error_response(_repo_status(exc), str(exc), detail)


async def _on_compiler_error(_request: Request, exc: Exception) -> JSONResponse:
    return error_response(422, str(exc))


def body_fields_at(request: Request, loc: tuple) -> list[str] | None:
    """The field names the request body's model allows at `loc`'s parent (loc ('body', 'measure', 'repeats') ->
    the measure options), from the route's body model; None where that is not a model."""
    body = getattr(request.scope.get("route"), "body_field", None)
    if body is None or len(loc) < 2 or loc[0] != "body":
        return None
    model = body.field_info.annotation
    for part in loc[1:-1]:
        fields = getattr(model, "model_fields", None)
        if not fields or part not in fields:
            return None
        annotation = fields[part].annotation
        model = next((a for a in typing.get_args(annotation) if hasattr(a, "model_fields")), annotation)
    return list(model.model_fields) if hasattr(model, "model_fields") else None


async def _on_validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = list(exc.errors())
    for e in errors:  # an unknown name: say which are known
        if e["type"] == "extra_forbidden" and (allowed := body_fields_at(request, tuple(e.get("loc", ())))):
            e["msg"] = f"{e['loc'][-1]!r} is not one of {', '.join(allowed)}"
    problems = _field_problems(errors)
    bad_json = [p for p in problems if p["type"] == "json_invalid"]
    if bad_json:
        ctx = bad_json[0].get("ctx", {})
        return error_response(400, f"malformed JSON body: {ctx.get('error', bad_json[0]['msg'])}", bad_json)
    summary = "; ".join(_line(p) for p in problems[:5])
    return error_response(422, f"invalid request: {summary}", problems)


def allowed_methods(request: Request) -> list[str]:
    """Every method the OpenAPI documents at the request's path, plus HEAD beside GET (Starlette's 405 names only
    the first route that matched the path, e.g. POST /v1/jobs but not GET /v1/jobs); empty for a path it does not
    document."""
    methods: set[str] = set()
    for template, operations in request.app.openapi()["paths"].items():
        if re.fullmatch(re.sub(r"\\{[^/]+?\\}", "[^/]+", re.escape(template)), request.url.path):
            methods |= {method.upper() for method in operations}
    return sorted(methods | ({"HEAD"} if "GET" in methods else set()))


async def _on_http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    headers = dict(getattr(exc, "headers", None) or {})
    if exc.status_code == 405 and (allowed := allowed_methods(request)):
        headers["Allow"] = ", ".join(allowed)
        return error_response(405, f"method {request.method} not allowed here; allowed: {headers['Allow']}",
                              None, headers)
    return error_response(exc.status_code, str(exc.detail), getattr(exc, "extra_detail", None), headers or None)


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
