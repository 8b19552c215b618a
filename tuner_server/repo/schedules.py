"""Best schedules under version control: an append-only history per (workload, device class) and a head.

Every change of head appends a version (improved, rollback, pin, import, revalidated), so the head is
always the newest version and "the head at time t" is the newest version created at or before t.
Nothing is rewritten or deleted; only the `schedule_heads` pointer row changes.
"""
from __future__ import annotations

import math
from datetime import datetime

from sqlalchemy import and_, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, contains_eager, joinedload

from tuner_server.db.models import ScheduleHead, ScheduleVersion, Trial, Workload
from tuner_server.db.types import utcnow
from tuner_server.repo.errors import Conflict, NotFound
from tuner_server.repo.records import Page, ScheduleKeySummary, VersionDiff
from tuner_server.repo.workloads import canonical_workload


def beats(candidate: Trial, incumbent: Trial | None) -> bool:
    """The rule for trials that cannot be timed against the head (imports from another farm): a verified (OK) trial
    beats the head when each median lies outside the other's CI on the faster side — candidate median < head
    ci_low and candidate ci_high < head median (a missing CI bound counts as the median) — or when there is no
    head. The farm's own trials move the head only head to head (repo/comparisons.py)."""
    if candidate.status != "OK" or candidate.median_s is None:
        return False
    if incumbent is None:
        return True
    if incumbent.median_s is None:
        return True
    high = candidate.ci_high_s if candidate.ci_high_s is not None else candidate.median_s
    low = incumbent.ci_low_s if incumbent.ci_low_s is not None else incumbent.median_s
    return candidate.median_s < low and high < incumbent.median_s


def maybe_promote(trial: Trial, *, session: Session, now: datetime | None = None, reason: str = "import",
                  author: str | None = None, message: str | None = None) -> ScheduleVersion | None:
    """Append a version pointing at `trial` if it `beats` the head; a pinned key never moves automatically."""
    if not beats(trial, None):  # not a candidate at all (not OK, or no median)
        return None
    pointer = lock_pointer(session, trial.workload_id, trial.device_class, now or utcnow())
    if pointer.pinned:
        return None
    current = head_of(session, pointer)
    if not beats(trial, current.trial if current else None):
        return None
    return append_version(session, pointer, trial, reason=reason, author=author, message=message,
                          job_id=trial.job_id, now=now)


def head_of(session: Session, pointer: ScheduleHead) -> ScheduleVersion | None:
    """The head version a (locked) pointer names."""
    return _version_row(session, pointer, pointer.head_version) if pointer.head_version else None


def head(workload_key: str, device_class: str, *, session: Session) -> ScheduleVersion | None:
    """The current best version of a key (None if the key has no versions, or was never seen), with its trial and
    workload loaded: one query, for GET /v1/best's sake."""
    key = canonical_workload(workload_key).key
    return session.scalar(
        select(ScheduleVersion)
        .join(Workload, Workload.id == ScheduleVersion.workload_id)
        .join(ScheduleHead, and_(ScheduleHead.workload_id == ScheduleVersion.workload_id,
                                 ScheduleHead.device_class == ScheduleVersion.device_class,
                                 ScheduleHead.head_version == ScheduleVersion.version))
        .where(Workload.key == key, ScheduleVersion.device_class == device_class)
        .options(contains_eager(ScheduleVersion.workload), joinedload(ScheduleVersion.trial)))


def head_version(canonical_key: str, device_class: str, *, session: Session) -> int | None:
    """The version number of a key's head (None: no head), for a workload key already in canonical form."""
    return session.execute(select(ScheduleHead.head_version).join(Workload, Workload.id == ScheduleHead.workload_id)
                           .where(Workload.key == canonical_key, ScheduleHead.device_class == device_class)).scalar()


def version(workload_key: str, device_class: str, number: int, *, session: Session) -> ScheduleVersion:
    pointer = _pointer(session, workload_key, device_class)
    row = _version_row(session, pointer, number) if pointer else None
    if row is None:
        raise NotFound(f"no version {number} of {workload_key} on {device_class}")
    return row


def as_of(workload_key: str, device_class: str, at: datetime, *, session: Session) -> ScheduleVersion | None:
    """The version that was head at time `at` (None before the first one)."""
    workload_id = _workload_id(session, workload_key)
    return session.scalars(select(ScheduleVersion).where(
        ScheduleVersion.workload_id == workload_id, ScheduleVersion.device_class == device_class,
        ScheduleVersion.created_at <= at).order_by(ScheduleVersion.version.desc()).limit(1)).first()


def history(workload_key: str, device_class: str, *, session: Session, limit: int = 50,
            offset: int = 0) -> Page[ScheduleVersion]:
    """All versions of a key, newest first (empty for a key never tuned)."""
    where = (ScheduleVersion.workload_id == _workload_id(session, workload_key),
             ScheduleVersion.device_class == device_class)
    total = session.scalar(select(func.count()).select_from(ScheduleVersion).where(*where)) or 0
    rows = session.scalars(select(ScheduleVersion).where(*where).order_by(ScheduleVersion.version.desc())
                           .limit(limit).offset(offset)).all()
    return Page(list(rows), total, limit, offset)


def list_keys(*, session: Session, op: str | None = None, device_class: str | None = None, limit: int = 50,
              offset: int = 0) -> Page[ScheduleKeySummary]:
    """Every key that has a head, most recently changed first; `op` and `device_class` filter."""
    where = [ScheduleHead.head_version.is_not(None)]
    if op is not None:
        where.append(Workload.op == op)
    if device_class is not None:
        where.append(ScheduleHead.device_class == device_class)
    joined = select(ScheduleHead, Workload).join(Workload, Workload.id == ScheduleHead.workload_id).where(*where)
    total = session.scalar(select(func.count()).select_from(joined.subquery())) or 0
    rows = session.execute(joined.order_by(ScheduleHead.updated_at.desc(), Workload.key, ScheduleHead.device_class)
                           .limit(limit).offset(offset)).all()
    items = [ScheduleKeySummary(w.key, w.op, dict(w.params), h.device_class, h.head_version, h.pinned, h.updated_at)
             for h, w in rows]
    return Page(items, total, limit, offset)


def head_configs(op: str, device_class: str, *, session: Session, limit: int = 64) -> list[tuple[str, dict]]:
    """(workload key, head config) of the newest `limit` keys of `op` with a head on `device_class`: what won on
    other shapes, the first candidates for a shape nobody tuned (predict.py)."""
    rows = session.execute(
        select(Workload.key, Trial.config)
        .join(ScheduleHead, ScheduleHead.workload_id == Workload.id)
        .join(ScheduleVersion, (ScheduleVersion.workload_id == ScheduleHead.workload_id)
              & (ScheduleVersion.device_class == ScheduleHead.device_class)
              & (ScheduleVersion.version == ScheduleHead.head_version))
        .join(Trial, Trial.id == ScheduleVersion.trial_id)
        .where(Workload.op == op, ScheduleHead.device_class == device_class)
        .order_by(ScheduleHead.updated_at.desc(), Workload.key).limit(limit)).all()
    return [(key, dict(config)) for key, config in rows]


def diff(workload_key: str, device_class: str, from_version: int, to_version: int, *,
         session: Session) -> VersionDiff:
    """Knobs whose values differ between two versions' configs, and the ratio of their medians."""
    a = version(workload_key, device_class, from_version, session=session).trial
    b = version(workload_key, device_class, to_version, session=session).trial
    changed = {k: (a.config.get(k), b.config.get(k)) for k in sorted(set(a.config) | set(b.config))
               if a.config.get(k) != b.config.get(k)}
    ratio = b.median_s / a.median_s if a.median_s and b.median_s is not None else None
    return VersionDiff(from_version, to_version, changed, ratio)


def rollback(workload_key: str, device_class: str, to_version: int, *, session: Session, author: str,
             message: str | None = None, now: datetime | None = None) -> ScheduleVersion:
    """Make an earlier version's trial the head again, as a NEW version with reason 'rollback'."""
    target = version(workload_key, device_class, to_version, session=session)
    pointer = lock_pointer(session, target.workload_id, device_class, now or utcnow())
    if pointer.pinned:
        raise Conflict(f"{workload_key} on {device_class} is pinned to version {pointer.pinned_version}; "
                       "unpin it (or pin another version) first")
    if pointer.head_version == to_version:
        raise Conflict(f"version {to_version} is already the head")
    return append_version(session, pointer, target.trial, reason="rollback", author=author, now=now,
                   message=message or f"rollback to version {to_version}")


def pin(workload_key: str, device_class: str, number: int | None, *, session: Session, author: str,
        message: str | None = None, now: datetime | None = None) -> ScheduleVersion:
    """Pin a version (a new head version with its trial; automatic promotion stops) or unpin (None).
    Both append a version with reason 'pin', so the pin state is part of the history. Conflict, appending nothing,
    for a pin of the schedule (the trial) the key is pinned to already, as for an unpin of a key not pinned."""
    current = head(workload_key, device_class, session=session)
    if current is None:
        raise NotFound(f"no schedule versions for {workload_key} on {device_class}")
    pointer = lock_pointer(session, current.workload_id, device_class, now or utcnow())
    if number is None:
        if not pointer.pinned:
            raise Conflict(f"{workload_key} on {device_class} is not pinned")
        pointer.pinned, pointer.pinned_version = False, None
        return append_version(session, pointer, current.trial, reason="pin", author=author, now=now,
                       message=message or f"unpin (was pinned to version {current.version})")
    target = version(workload_key, device_class, number, session=session)
    _refuse_repin(pointer, head_of(session, pointer), target.trial_id, f"version {number}")
    pointer.pinned, pointer.pinned_version = True, number
    return append_version(session, pointer, target.trial, reason="pin", author=author, now=now,
                   message=message or f"pin version {number}")


def pin_trial(workload_key: str, device_class: str, trial_id: str, *, session: Session, author: str,
              message: str | None = None, now: datetime | None = None) -> ScheduleVersion:
    """Pin a trial of the key that need not be a version yet: a new head version with reason 'pin' points at it.
    An admin's way past a head that nothing can beat (an implausible median imported before imports were
    checked): NotFound unless the trial is of this workload and class, Conflict unless it is verified (OK) with a
    positive finite median, and Conflict for the trial the key is pinned to already."""
    workload_id = _workload_id(session, workload_key)
    trial = session.get(Trial, trial_id)
    if trial is None or trial.workload_id != workload_id or trial.device_class != device_class:
        raise NotFound(f"no trial {trial_id} of {workload_key} on {device_class}")
    if trial.status != "OK" or not (trial.median_s is not None and 0 < trial.median_s < math.inf):
        raise Conflict(f"trial {trial_id} cannot be the head: status {trial.status}, median {trial.median_s!r} "
                       "(a head is a verified trial with a positive median)")
    pointer = lock_pointer(session, trial.workload_id, device_class, now or utcnow())
    _refuse_repin(pointer, head_of(session, pointer), trial.id, f"trial {trial_id}")
    pointer.pinned = True
    made = append_version(session, pointer, trial, reason="pin", author=author, now=now,
                          message=message or f"pin trial {trial_id}")
    pointer.pinned_version = made.version
    session.flush()
    return made


def _refuse_repin(pointer: ScheduleHead, current: ScheduleVersion | None, trial_id: str, what: str) -> None:
    """Conflict when the (locked) key is pinned already and its head is `trial_id`'s schedule: a second pin of it
    would append a version that changes nothing."""
    if pointer.pinned and current is not None and current.trial_id == trial_id:
        raise Conflict(f"{what} is already the pinned head (version {current.version}, trial {trial_id}); nothing "
                       "changed")


def append_version(session: Session, pointer: ScheduleHead, trial: Trial, *, reason: str, now: datetime | None,
                   author: str | None = None, message: str | None = None,
                   job_id: str | None = None) -> ScheduleVersion:
    """A new head version pointing at `trial` (the pointer must be locked: `lock_pointer`)."""
    now = now or utcnow()
    number = (pointer.head_version or 0) + 1
    row = ScheduleVersion(workload_id=pointer.workload_id, device_class=pointer.device_class, version=number,
                          parent_version=pointer.head_version, trial_id=trial.id, reason=reason,
                          pinned=pointer.pinned, author=author, job_id=job_id, message=message, created_at=now)
    session.add(row)
    pointer.head_version, pointer.updated_at = number, now
    session.flush()
    return row


def _workload_id(session: Session, workload_key: str) -> str | None:
    """The id of a workload key (validated: InvalidRequest if malformed); None if never seen."""
    return session.scalar(select(Workload.id).where(Workload.key == canonical_workload(workload_key).key))


def _pointer(session: Session, workload_key: str, device_class: str) -> ScheduleHead | None:
    workload_id = _workload_id(session, workload_key)
    return session.get(ScheduleHead, (workload_id, device_class)) if workload_id else None


def lock_pointer(session: Session, workload_id: str, device_class: str, now: datetime) -> ScheduleHead:
    """The head row of a key, locked (PostgreSQL) and created empty if new; concurrent creators are safe."""
    key = (workload_id, device_class)
    pointer = session.get(ScheduleHead, key, with_for_update=True, populate_existing=True)
    if pointer is not None:
        return pointer
    try:
        with session.begin_nested():
            session.add(ScheduleHead(workload_id=workload_id, device_class=device_class, head_version=None,
                                     pinned=False, updated_at=now))
    except IntegrityError:
        pass  # another transaction created it first; lock theirs below
    return session.get(ScheduleHead, key, with_for_update=True, populate_existing=True)


def _version_row(session: Session, pointer: ScheduleHead, number: int) -> ScheduleVersion | None:
    return session.scalar(select(ScheduleVersion).where(
        ScheduleVersion.workload_id == pointer.workload_id, ScheduleVersion.device_class == pointer.device_class,
        ScheduleVersion.version == number))
