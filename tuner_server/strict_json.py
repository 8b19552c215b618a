"""Strict JSON reading (RFC 8259 and I-JSON, RFC 7493): bytes must be UTF-8; NaN, Infinity and numbers too large
for a double are malformed, not numbers; an object may not name a key twice; no string may hold a NUL character or
a lone UTF-16 surrogate; nesting and number literals are bounded.

Python's json module reads `NaN`, `Infinity` and `1e999` (as inf) by default, guesses UTF-16 or UTF-32 from the
bytes, keeps the last of two equal keys, and reads "\\ud800" as a string no UTF-8 encoder can write. A non-finite
number that got into the database is JSON no other reader accepts (PostgreSQL refuses it outright) and a median no
trial can beat; a NUL ("\\u0000") is valid JSON, but PostgreSQL's text and jsonb cannot hold it; a lone surrogate
crashes whatever echoes or stores the string. The edges that read JSON from outside (REST bodies, imports) use
`loads` here; every refusal is a `MalformedJSON` (a ValueError) whose message says what is wrong and where.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_DEPTH = 32  # arrays and objects inside each other; the deepest body the API takes has 4 levels
MAX_NUMBER_CHARS = 100  # a number literal's characters (a double needs at most 24; 2**64 needs 20 digits)
_BAD_CHARACTER = re.compile("[\x00\ud800-\udfff]")


class MalformedJSON(ValueError):
    """A JSON text this reader refuses; the message names the problem (and where, when it knows)."""


class NotUTF8(MalformedJSON):
    """Bytes that are not UTF-8 (JSON exchanged between systems must be: RFC 8259 section 8.1)."""


class NonFiniteNumber(MalformedJSON):
    """A JSON text holds NaN, Infinity or a number beyond a double's range."""


class NumberTooLong(MalformedJSON):
    """A number literal of more than MAX_NUMBER_CHARS characters (5,000 digits cost time to convert and mean
    nothing any field allows)."""


class NestedTooDeeply(MalformedJSON):
    """Arrays and objects nested more than MAX_DEPTH deep."""


class DuplicateKey(MalformedJSON):
    """An object names the same key twice (which one counts would be a guess)."""


class NulCharacter(MalformedJSON):
    """A JSON string (a key or a value) holds U+0000."""


class LoneSurrogate(MalformedJSON):
    """A JSON string holds an unpaired UTF-16 surrogate escape ("\\ud800"): no Unicode character, not storable."""


def _constant(name: str) -> Any:
    raise NonFiniteNumber(f"{name} is not JSON: numbers must be finite")


def _short(text: str) -> str:
    return text if len(text) <= 24 else f"{text[:12]}...{text[-6:]} ({len(text)} characters)"


def _finite_float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise NumberTooLong(f"number {_short(text)} is too long: at most {MAX_NUMBER_CHARS} characters")
    value = float(text)
    if not math.isfinite(value):
        raise NonFiniteNumber(f"{_short(text)} is beyond a double's range")
    return value


def _bounded_int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise NumberTooLong(f"number {_short(text)} is too long: at most {MAX_NUMBER_CHARS} characters")
    return int(text)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(f"key {key!r} appears twice in one object")
        out[key] = value
    return out


def _where(path: str) -> str:
    return path or "the text"


def _check_string(text: str, path: str) -> None:
    found = _BAD_CHARACTER.search(text)
    if found is None:
        return
    if found.group() == "\x00":
        raise NulCharacter(f"{_where(path)}: a NUL character (\\u0000) is not allowed in a string")
    raise LoneSurrogate(f"{_where(path)}: a lone UTF-16 surrogate (\\u{ord(found.group()):04x}) is not a character; "
                        "a string must be valid Unicode")


def _check(value: Any, path: str, depth: int) -> None:
    """Every string (keys too) without NUL or lone surrogates; nesting within MAX_DEPTH."""
    if isinstance(value, str):
        _check_string(value, path)
        return
    if not isinstance(value, dict | list):
        return
    if depth > MAX_DEPTH:
        raise NestedTooDeeply(f"{_where(path)}: nested too deeply: at most {MAX_DEPTH} levels of arrays and objects")
    if isinstance(value, dict):
        for key, item in value.items():
            _check_string(key, f"{path}.{key!r}" if path else repr(key))  # repr: printable whatever the key holds
            _check(item, f"{path}.{key}" if path else key, depth + 1)
    else:
        for i, item in enumerate(value):
            _check(item, f"{path}[{i}]", depth + 1)


def _text(data: str | bytes | bytearray) -> str:
    if isinstance(data, str):
        return data
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotUTF8(f"not UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start} ({exc.reason}); JSON must "
                      "be sent as UTF-8") from None


def loads(data: str | bytes | bytearray) -> Any:
    """json.loads, refusing (with a MalformedJSON subclass that names the problem) bytes that are not UTF-8, NaN,
    Infinity and overflowing numbers, number literals over MAX_NUMBER_CHARS, duplicate keys, nesting over
    MAX_DEPTH, and NUL or lone surrogates in strings. Plain syntax errors stay json.JSONDecodeError (a
    ValueError)."""
    text = _text(data)
    try:
        value = json.loads(text, parse_constant=_constant, parse_float=_finite_float, parse_int=_bounded_int,
                           object_pairs_hook=_unique_keys)
    except RecursionError:  # the C scanner's own limit (about 1000 levels): far past MAX_DEPTH
        raise NestedTooDeeply(f"nested too deeply: at most {MAX_DEPTH} levels of arrays and objects") from None
    _check(value, "", 1)
    return value
