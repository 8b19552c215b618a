"""Every router is built with `route_class=StrictJSONRoute`, which reads requests strictly before FastAPI does:

- a JSON body must be sent as `Content-Type: application/json` (charset, if named, UTF-8), else 415 (FastAPI would
  not parse it and answer a misleading 422 "Input should be a valid dictionary");
- a body is read with tuner_server.strict_json: bytes that are not UTF-8, NaN, Infinity, 1e999, a number literal of
  hundreds of digits, nesting past strict_json.MAX_DEPTH, a key given twice, and "\\u0000" or a lone surrogate in a
  string are each a 400 saying which (FastAPI would say "There was an error parsing the body", or keep the last of
  two keys);
- the query string follows api/query_rules.py: each parameter once, only declared ones, integers as plain digits.
"""
from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import HTTPException, Request, Response
from fastapi.routing import APIRoute

from tuner_server.api.errors import ApiError
from tuner_server.api.query_rules import QueryRules, check_query, rules_of_operation
from tuner_server.strict_json import MalformedJSON, loads

JSON_TYPE = "application/json"


class MalformedBody(HTTPException):
    """A body strict_json refuses; an HTTPException so FastAPI's body reading passes it on (it turns any other
    exception into a bare 'There was an error parsing the body')."""

    def __init__(self, problem: str):
        super().__init__(400, f"malformed JSON body: {problem}")
        self.extra_detail = {"problem": problem}


class StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            try:
                self._json = loads(await self.body())
            except MalformedJSON as exc:
                raise MalformedBody(str(exc)) from None
        return self._json


def content_type_problem(header: str | None) -> str | None:
    """Why a Content-Type header does not announce a UTF-8 JSON body; None when it does."""
    if not header:
        return "no Content-Type"
    media, *params = (part.strip() for part in header.split(";"))
    if media.lower() != JSON_TYPE:
        return f"Content-Type {header[:100]!r}"
    for param in params:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() not in ("utf-8", "utf8"):
            return f"charset {value.strip()[:40]!r}"
    return None


async def check_content_type(request: Request) -> None:
    """415 for a body that is not announced as UTF-8 JSON (an empty body without a type is left to the route's
    validation: 422 naming the missing body)."""
    header = request.headers.get("content-type")
    problem = content_type_problem(header)
    if problem is None:
        return
    body = await request.body()  # read (within max_request_bytes) even when refused: the connection stays usable
    if header is None and not body:
        return
    raise ApiError(415, f"unsupported media type: {problem}; send the body as JSON with 'Content-Type: "
                        f"{JSON_TYPE}' (UTF-8)", {"required_content_type": JSON_TYPE})


class StrictJSONRoute(APIRoute):
    _query_rules: QueryRules | None = None

    def query_rules(self, request: Request) -> QueryRules | None:
        """The query parameters the OpenAPI documents for this route and method (computed once); None for a route
        left out of the documentation."""
        if self._query_rules is None and self.include_in_schema:
            operations = request.app.openapi()["paths"].get(self.path_format, {})
            operation = operations.get(request.method.lower())
            if operation is not None:
                self._query_rules = rules_of_operation(operation)
        return self._query_rules

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        takes_json = self.body_field is not None

        async def strict_handler(request: Request) -> Response:
            strict = StrictJSONRequest(request.scope, request.receive)
            rules = self.query_rules(strict)
            if rules is not None:
                check_query(strict.query_params, rules)
            if takes_json:
                await check_content_type(strict)
            return await handler(strict)

        return strict_handler
