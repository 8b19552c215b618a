"""Workloads: one row per canonical key, validated by compiler_core."""
from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

import compiler_core as cc
from tuner_server.db.models import Workload
from tuner_server.repo.errors import InvalidRequest, NotFound

MAX_KEY = 512  # the workloads.key column


def canonical_workload(key: str) -> cc.Workload:
    """Parse and validate a workload key; InvalidRequest naming the problem (a canonical key over MAX_KEY
    characters too: the column would refuse it)."""
    try:
        workload = cc.parse_key(key)
    except (cc.WorkloadError, KeyError, ValueError) as exc:
        raise InvalidRequest(f"bad workload {key[:600]!r}: {exc}") from exc
    if len(workload.key) > MAX_KEY:
        raise InvalidRequest(f"workload key of {len(workload.key)} characters; at most {MAX_KEY} (a shorter "
                             "expression or fewer vectors)")
    return workload


def get_or_create_workload(key: str, *, session: Session) -> Workload:
    """The row for `key` (canonicalised first), created with its flops and bytes if new."""
    w = canonical_workload(key)
    row = session.scalar(select(Workload).where(Workload.key == w.key))
    if row is not None:
        return row
    opdef = cc.get_op(w.op)
    row = Workload(key=w.key, op=w.op, params=w.param_dict, flops=_count(opdef.flops, w),
                   bytes=_count(opdef.bytes_moved, w))
    try:
        with session.begin_nested():
            session.add(row)
    except IntegrityError:  # created concurrently by another transaction
        row = session.scalar(select(Workload).where(Workload.key == w.key))
        if row is None:
            raise
    return row


def find_workload(key: str, *, session: Session) -> Workload:
    """The existing row for `key`; NotFound if the farm has never seen it."""
    w = canonical_workload(key)
    row = session.scalar(select(Workload).where(Workload.key == w.key))
    if row is None:
        raise NotFound(f"no workload {w.key}")
    return row


def _count(fn, w: cc.Workload) -> int | None:
    try:
        return int(fn(w))
    except Exception:  # an op without a work count still gets tuned; GFLOP/s is just not shown
        return None
