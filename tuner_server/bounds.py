"""The ranges the edges (REST, gRPC, imports) check numbers and times against before the database sees them.

A value past these is refused with a message naming the field and the range, instead of reaching a driver that
overflows (SQLite: OverflowError beyond 64 bits; PostgreSQL: DataError beyond a column's type) or a zone
conversion past year 1 or 9999.
"""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

MAX_INT32 = 2**31 - 1  # Integer columns (versions, attempts, budgets) on PostgreSQL
MAX_VERSION = MAX_INT32  # schedule version numbers
MAX_OFFSET = MAX_INT32  # pagination: far past any table this farm holds, inside every driver's integers
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)  # no farm measured anything before
LATEST = datetime(9999, 12, 30, tzinfo=UTC)  # a day short of datetime.max: any zone offset converts to UTC


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
