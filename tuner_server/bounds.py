"""The ranges the edges (REST, gRPC, imports) check numbers and times against before the database sees them.

A value past these is refused with a message naming the field and the range, instead of reaching a driver that
overflows (SQLite: OverflowError beyond 64 bits; PostgreSQL: DataError beyond a column's type) or a zone
conversion past year 1 or 9999.
"""
from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

MAX_INT32 = 2**31 - 1  # Integer columns (versions, attempts, budgets) on PostgreSQL
MAX_VERSION = MAX_INT32  # schedule version numbers
MAX_OFFSET = MAX_INT32  # pagination: far past any table this farm holds, inside every driver's integers
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)  # no farm measured anything before
LATEST = datetime(9999, 12, 30, tzinfo=UTC)  # a day short of datetime.max: any zone offset converts to UTC
TIME_EXAMPLE = "2026-01-01T12:00:00Z or 2026-01-01T12:00:00+02:00"
_ZONE_OFFSET = re.compile(r"([+-])([0-9]{2}):?([0-9]{2})$")


def time_problem(value: datetime) -> str | None:
    """Why `value` cannot be stored or compared with stored times (no zone, or out of range); None when it can."""
    if value.tzinfo is None or value.utcoffset() is None:
        return "has no time zone; add 'Z' or an offset like '+00:00'"
    # `EARLIEST <= value` converts `value` to UTC, which overflows near year 1 or 9999: its wall-clock time is
    # checked first (an offset is under a day, so within a day of the range the conversion is safe).
    wall, day = value.replace(tzinfo=None), timedelta(days=1)
    safe = EARLIEST.replace(tzinfo=None) - day <= wall <= LATEST.replace(tzinfo=None) + day
    if not (safe and EARLIEST <= value <= LATEST):
        return f"must be between {EARLIEST.isoformat()} and {LATEST.isoformat()}"
    return None


def parse_time(text: str) -> datetime:
    """An ISO 8601 time with a zone (TIME_EXAMPLE) within EARLIEST .. LATEST; ValueError otherwise, whose message
    (to follow the value's name) says what is wrong and what is allowed, never in datetime's own words (an offset of
    +25:00 is "offset must be a timedelta strictly between -timedelta(hours=24) and ...")."""
    offset = _ZONE_OFFSET.search(text.partition("T")[2])
    if offset is not None and (int(offset[2]) > 23 or int(offset[3]) > 59):  # datetime reads +09:60 as +10:00
        raise ValueError(f"has a zone offset {offset[0]} out of range: an offset is within -23:59 .. +23:59, e.g. "
                         f"{TIME_EXAMPLE}")
    try:
        value = datetime.fromisoformat(text)
    except ValueError as exc:
        reason = "" if str(exc).startswith("Invalid isoformat") else f" ({exc})"  # else e.g. "month must be in 1..12"
        raise ValueError(f"is not an ISO 8601 time{reason}: write it like {TIME_EXAMPLE}") from None
    problem = time_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value
