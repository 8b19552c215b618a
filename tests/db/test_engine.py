"""Engine details: URL normalisation and timezone-aware UTC timestamps on both backends."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy.exc import StatementError

from tests.db.factories import MATMUL
from tuner_server.db import Workload, normalize_url
from tuner_server.repo import get_or_create_workload


def test_normalize_url():
    assert normalize_url("postgresql://u:p%40ss@h:5/db") == "postgresql+psycopg://u:p%40ss@h:5/db"
    assert normalize_url("postgres://h/db") == "postgresql+psycopg://h/db"
    assert normalize_url("sqlite:///./tunefarm.db") == "sqlite:///./tunefarm.db"


def test_timestamps_come_back_aware_in_utc(session):
    plus2 = datetime(2026, 3, 1, 14, 30, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    w = get_or_create_workload(MATMUL, session=session)
    w.created_at = plus2
    session.commit()
    session.expire_all()
    got = session.get(Workload, w.id).created_at
    assert got == plus2 and got.tzinfo is not None and got.utcoffset() == timedelta(0)
    assert got == datetime(2026, 3, 1, 12, 30, 0, 123456, tzinfo=UTC)


def test_naive_timestamps_are_refused(session):
    w = get_or_create_workload(MATMUL, session=session)
    w.created_at = datetime(2026, 1, 1)
    with pytest.raises(StatementError, match="naive datetime"):
        session.flush()
