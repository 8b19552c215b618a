"""Query strings read strictly, the same on every route: each parameter at most once, only the ones the route
declares, and integers as plain decimal digits.

FastAPI keeps the last of a repeated parameter, ignores one it does not declare (`?sate=done` filtered nothing) and
reads integers the way pydantic's lax mode does (`64.0`, `6_4`, ` 64`, `+64`, `064` all read as 64), where a body's
`"M": 64.0` is a 422. An integer here is written as JSON writes one (INTEGER_TEXT), the one rule for integers
in text: the CLI's --params reads them alike, and in a body an integer param is a JSON number (api/inputs.py); a
refusal names the parameter's range. `QueryRules` says what one route accepts; it is built from the route's OpenAPI
parameters (what the documentation promises is what is checked), or from a query model's JSON schema (the hot
/v1/best path, which answers before routing). No route takes a list in its query string, so a repeated parameter is
always an error.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import QueryParams

from compiler_core.workload import UNSIGNED_TEXT
from tuner_server.api.errors import ApiError

# An integer in a query string is spelled as compiler_core's UNSIGNED_TEXT ('-' only where negatives are allowed):
# unlike a workload key's INT_TEXT any length passes the form here, and the parameter's range refuses it.
INTEGER_TEXT = re.compile(f"-?{UNSIGNED_TEXT}")
_DIGITS = re.compile(UNSIGNED_TEXT)  # INTEGER_TEXT without its '-'
MAX_ECHO = 40  # characters of a refused value repeated in the error


@dataclass(frozen=True)
class IntegerRule:
    """An integer query parameter's bounds (None: unbounded on that side), from its JSON schema."""

    minimum: int | None = None
    maximum: int | None = None

    @property
    def negative(self) -> bool:
        """Whether a '-' may lead its digits."""
        return self.minimum is None or self.minimum < 0

    def allowed(self) -> str:
        if self.minimum is not None and self.maximum is not None:
            return f"an integer from {self.minimum} to {self.maximum}"
        if self.minimum is not None:
            return f"an integer of at least {self.minimum}"
        return "an integer" if self.maximum is None else f"an integer of at most {self.maximum}"


@dataclass(frozen=True)
class QueryRules:
    allowed: tuple[str, ...]  # the declared names, in declaration order
    integers: Mapping[str, IntegerRule]  # the integer parameters


def _integer_schema(schema: Mapping[str, Any]) -> Mapping[str, Any] | None:
    options = schema.get("anyOf", [schema])
    return next((s for s in options if s.get("type") == "integer"), None)


def _integer_rule(schema: Mapping[str, Any]) -> IntegerRule:
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is None and schema.get("exclusiveMinimum") is not None:
        low = schema["exclusiveMinimum"] + 1
    if high is None and schema.get("exclusiveMaximum") is not None:
        high = schema["exclusiveMaximum"] - 1
    return IntegerRule(low, high)


def rules_of(schemas: Mapping[str, Mapping[str, Any]]) -> QueryRules:
    """The rules of parameters given as name -> JSON schema (an OpenAPI parameter's `schema`, or a property)."""
    integers = {}
    for name, schema in schemas.items():
        found = _integer_schema(schema)
        if found is not None:
            integers[name] = _integer_rule(found)
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


def echo(value: str) -> str:
    """A refused value as an error repeats it: at most MAX_ECHO characters."""
    return value if len(value) <= MAX_ECHO else value[:MAX_ECHO] + "..."


def check_query(params: QueryParams, rules: QueryRules) -> None:
    """ApiError 422 for a repeated parameter, one the route does not declare (listing those it does) or an integer
    not written as INTEGER_TEXT (decimal digits, no '+', space or leading zero; a leading '-' only where
    negatives are allowed), naming the parameter's range."""
    reject_repeated_params(params)
    unknown = [name for name in params if name not in rules.allowed]
    if unknown:
        allowed = ", ".join(rules.allowed) or "none"
        named = ", ".join(f"query.{name}" for name in unknown)
        raise ApiError(422, f"{named}: unknown query parameter{'s' if len(unknown) > 1 else ''}; allowed: {allowed}",
                       {"unknown": unknown, "allowed": list(rules.allowed)})
    for name, value in params.items():
        rule = rules.integers.get(name)
        if rule is None or (INTEGER_TEXT if rule.negative else _DIGITS).fullmatch(value):
            continue
        given = {"parameter": name, "input": echo(value), "minimum": rule.minimum, "maximum": rule.maximum}
        if INTEGER_TEXT.fullmatch(value):  # a negative number where none is allowed
            raise ApiError(422, f"query.{name}: {echo(value)} is out of range: {rule.allowed()}", given)
        form = "an optional '-' and" if rule.negative else "only"
        raise ApiError(422, f"query.{name}: {echo(value)!r} is not a valid integer: {rule.allowed()}, written as "
                            f"{form} decimal digits without '+', spaces or a leading zero (e.g. {name}=64)", given)
