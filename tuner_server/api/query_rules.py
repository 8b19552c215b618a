"""Query strings read strictly, the same on every route: each parameter at most once, only the ones the route
declares, and integers as plain decimal digits.

FastAPI keeps the last of a repeated parameter, ignores one it does not declare (`?sate=done` filtered nothing) and
reads integers the way pydantic's lax mode does (`64.0`, `6_4`, ` 64`, `+64` all read as 64), where a body's
`"M": 64.0` is a 422. `QueryRules` says what one route accepts; it is built from the route's OpenAPI parameters (what
the documentation promises is what is checked), or from a query model's JSON schema (the hot /v1/best path, which
answers before routing). No route takes a list in its query string, so a repeated parameter is always an error.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import QueryParams

from tuner_server.api.errors import ApiError

_DIGITS = re.compile(r"[0-9]+")
_SIGNED_DIGITS = re.compile(r"-?[0-9]+")
MAX_ECHO = 40  # characters of a refused value repeated in the error


@dataclass(frozen=True)
class QueryRules:
    allowed: tuple[str, ...]  # the declared names, in declaration order
    integers: Mapping[str, bool]  # integer parameter -> whether it may be negative


def _integer_schema(schema: Mapping[str, Any]) -> Mapping[str, Any] | None:
    options = schema.get("anyOf", [schema])
    return next((s for s in options if s.get("type") == "integer"), None)


def rules_of(schemas: Mapping[str, Mapping[str, Any]]) -> QueryRules:
    """The rules of parameters given as name -> JSON schema (an OpenAPI parameter's `schema`, or a property)."""
    integers = {}
    for name, schema in schemas.items():
        found = _integer_schema(schema)
        if found is not None:
            low = found.get("minimum", found.get("exclusiveMinimum"))
            integers[name] = low is None or low < 0
    return QueryRules(tuple(schemas), integers)


def rules_of_operation(operation: Mapping[str, Any]) -> QueryRules:
    """The rules of an OpenAPI operation's query parameters."""
    return rules_of({p["name"]: p.get("schema", {}) for p in operation.get("parameters", []) if p["in"] == "query"})


def reject_repeated_params(params: QueryParams) -> None:
    """A query parameter given twice is ambiguous (FastAPI would keep the last): 422 naming it."""
    seen: set[str] = set()
    for name, _ in params.multi_items():
        if name in seen:
            raise ApiError(422, f"query parameter {name!r} given more than once; give each at most once",
                           {"parameter": name})
        seen.add(name)


def _echo(value: str) -> str:
    return value if len(value) <= MAX_ECHO else value[:MAX_ECHO] + "..."


def check_query(params: QueryParams, rules: QueryRules) -> None:
    """ApiError 422 for a repeated parameter, one the route does not declare (listing those it does) or an integer
    that is not plain decimal digits (a leading '-' only where negatives are allowed)."""
    reject_repeated_params(params)
    unknown = [name for name in params if name not in rules.allowed]
    if unknown:
        allowed = ", ".join(rules.allowed) or "none"
        named = ", ".join(f"query.{name}" for name in unknown)
        raise ApiError(422, f"{named}: unknown query parameter{'s' if len(unknown) > 1 else ''}; allowed: {allowed}",
                       {"unknown": unknown, "allowed": list(rules.allowed)})
    for name, value in params.items():
        negative = rules.integers.get(name)
        if negative is None:
            continue
        if not (_SIGNED_DIGITS if negative else _DIGITS).fullmatch(value):
            form = "an optional '-' and decimal digits" if negative else "decimal digits only"
            raise ApiError(422, f"query.{name}: {_echo(value)!r} is not a valid integer ({form}, e.g. {name}=64)",
                           {"parameter": name, "input": _echo(value)})
