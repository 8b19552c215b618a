"""Strict JSON reading (RFC 8259): NaN, Infinity and numbers too large for a double are malformed, not numbers;
and no string may hold a NUL character.

Python's json module reads `NaN`, `Infinity` and `1e999` (as inf) by default. A non-finite number that got into the
database is JSON no other reader accepts (PostgreSQL refuses it outright) and a median no trial can beat; a NUL
("\\u0000") is valid JSON, but PostgreSQL's text and jsonb cannot hold it. The edges that read JSON from outside
(REST bodies, imports) use `loads` here.
"""
from __future__ import annotations

import json
import math
from typing import Any


class NonFiniteNumber(ValueError):
    """A JSON text holds NaN, Infinity or a number beyond a double's range."""


class NulCharacter(ValueError):
    """A JSON string (a key or a value) holds U+0000."""


def _constant(name: str) -> Any:
    raise NonFiniteNumber(f"{name} is not JSON: numbers must be finite")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NonFiniteNumber(f"{text} is beyond a double's range")
    return value


def _without_nul(value: Any, path: str) -> None:
    if isinstance(value, str):
        if "\x00" in value:
            raise NulCharacter(f"{path or 'the text'}: a NUL character (\\u0000) is not allowed in a string")
    elif isinstance(value, dict):
        for key, item in value.items():
            _without_nul(key, f"{path}.{key!r}" if path else repr(key))
            _without_nul(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _without_nul(item, f"{path}[{i}]")


def loads(text: str | bytes) -> Any:
    """json.loads without NaN, Infinity and overflowing numbers (NonFiniteNumber) or NUL in strings (NulCharacter);
    both are ValueErrors that name what is wrong."""
    value = json.loads(text, parse_constant=_constant, parse_float=_finite_float)
    _without_nul(value, "")
    return value
