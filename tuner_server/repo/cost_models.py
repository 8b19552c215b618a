"""Cost-model state: cached feature vectors per config, the trials a device class learns from, fitted models.

Feature vectors are float32 bytes keyed by (workload, feature set, config key); a feature set names the
featurizer, target and codegen that produced them, so vectors of different featurizers never mix.
Fitted models are versioned per (device class, feature set); only the newest few are kept.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from datetime import datetime

from sqlalchemy import delete, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, defer

from tuner_server.db.models import ConfigFeatures, CostModelRecord, Device, Trial, Workload
from tuner_server.db.types import utcnow
from tuner_server.repo.errors import InvalidRequest, NotFound
from tuner_server.repo.records import TrainingRow
from tuner_server.repo.workloads import canonical_workload

IN_CHUNK = 500  # config keys per IN-list: bounded statements on every backend
UNINFORMATIVE = "AGENT_LOST"  # the agent vanished: the trial says nothing about its config


def put_features(rows: list[tuple[str, str, str, bytes]], *, session: Session) -> int:
    """Store (workload key, feature set, config key, vector) rows not stored yet; returns how many were new.
    Re-featurizing a batch is harmless, so duplicates (stored, repeated, or written concurrently) are skipped."""
    ids = _workload_ids({key for key, *_ in rows}, session)  # NotFound before anything is written
    wanted: dict[tuple[str, str], dict[str, bytes]] = defaultdict(dict)
    for key, feature_set, config_key, vector in rows:
        wanted[ids[key], feature_set].setdefault(config_key, bytes(vector))
    now, values = utcnow(), []
    for (workload_id, feature_set), vectors in wanted.items():
        stored = {k for (k,) in _stored(session, workload_id, feature_set, list(vectors), ConfigFeatures.config_key)}
        values += [{"workload_id": workload_id, "feature_set": feature_set, "config_key": k, "vector": v,
                    "created_at": now} for k, v in vectors.items() if k not in stored]
    return _insert_ignoring_duplicates(session, values)


def get_features(workload_key: str, feature_set: str, config_keys: list[str], *,
                 session: Session) -> dict[str, bytes]:
    """config key -> vector for the given configs already featurized (a workload never seen has none)."""
    workload_id = session.scalar(select(Workload.id).where(Workload.key == canonical_workload(workload_key).key))
    if workload_id is None:
        return {}
    columns = (ConfigFeatures.config_key, ConfigFeatures.vector)
    return {k: bytes(v) for k, v in _stored(session, workload_id, feature_set, list(dict.fromkeys(config_keys)),
                                              *columns)}


def class_training_trials(device_class: str, feature_set: str, *, session: Session, limit: int = 50_000,
                          since: datetime | None = None) -> list[TrainingRow]:
    """The newest `limit` trials of a device class over all its workloads (the model transfers between them),
    oldest first, each with its cached feature vector or None."""
    features = ((ConfigFeatures.workload_id == Trial.workload_id) & (ConfigFeatures.feature_set == feature_set)
                & (ConfigFeatures.config_key == Trial.config_key))
    query = (select(Workload.key, Trial.config_key, Trial.config, Trial.median_s, Trial.status, Trial.created_at,
                    ConfigFeatures.vector)
             .select_from(Trial).join(Workload, Trial.workload_id == Workload.id)
             .outerjoin(ConfigFeatures, features).where(*_class_trials(device_class, since))
             .order_by(Trial.created_at.desc(), Trial.id.desc()).limit(limit))
    rows = session.execute(query).all()
    return [TrainingRow(key, config_key, dict(config), median_s, status, created_at,
                        None if vector is None else bytes(vector))
            for key, config_key, config, median_s, status, created_at, vector in reversed(rows)]


def count_class_trials(device_class: str, *, session: Session, since: datetime | None = None) -> int:
    """How many trials a refit would see: lets the caller skip a refit when little has arrived."""
    query = select(func.count()).select_from(Trial).where(*_class_trials(device_class, since))
    return session.scalar(query) or 0


def save_cost_model(device_class: str, feature_set: str, blob: bytes, *, objective: str, trained_on: int,
                    workloads: int, newest_trial_at: datetime | None, fit_s: float, session: Session,
                    keep: int = 3) -> CostModelRecord:
    """Append the next version of a class's model and drop all but the newest `keep` (blobs are large)."""
    if keep < 1:
        raise InvalidRequest(f"keep must be at least 1, not {keep}")
    # FOR NO KEY UPDATE (PostgreSQL) serialises savers of one class without blocking trials that reference it
    if session.get(Device, device_class, with_for_update={"key_share": True}) is None:
        raise NotFound(f"no device class {device_class}")
    same = (CostModelRecord.device_class == device_class, CostModelRecord.feature_set == feature_set)
    number = (session.scalar(select(func.max(CostModelRecord.version)).where(*same)) or 0) + 1
    record = CostModelRecord(device_class=device_class, feature_set=feature_set, version=number,
                             objective=objective, trained_on=trained_on, workloads=workloads,
                             newest_trial_at=newest_trial_at, fit_s=fit_s, blob=bytes(blob), created_at=utcnow())
    session.add(record)
    session.execute(delete(CostModelRecord).where(*same, CostModelRecord.version <= number - keep))
    session.flush()
    return record


def latest_cost_model(device_class: str, feature_set: str, *, session: Session) -> CostModelRecord | None:
    """The model to warm-start from (None: fit from scratch)."""
    return session.scalars(select(CostModelRecord).where(
        CostModelRecord.device_class == device_class, CostModelRecord.feature_set == feature_set)
        .order_by(CostModelRecord.version.desc()).limit(1)).first()


def list_cost_models(*, session: Session, device_class: str | None = None) -> list[CostModelRecord]:
    """Stored models, newest first; the blob is loaded only when read (it can be megabytes)."""
    where = [] if device_class is None else [CostModelRecord.device_class == device_class]
    return list(session.scalars(select(CostModelRecord).options(defer(CostModelRecord.blob)).where(*where)
                                .order_by(CostModelRecord.created_at.desc(), CostModelRecord.version.desc())))


def _class_trials(device_class: str, since: datetime | None) -> list:
    where = [Trial.device_class == device_class, Trial.status != UNINFORMATIVE]
    return where if since is None else [*where, Trial.created_at > since]


def _workload_ids(keys: Iterable[str], session: Session) -> dict[str, str]:
    """Given key -> workload id; NotFound naming every key the farm has never seen."""
    canonical = {key: canonical_workload(key).key for key in keys}
    query = select(Workload.key, Workload.id).where(Workload.key.in_(set(canonical.values())))
    found = {key: workload_id for key, workload_id in session.execute(query)} if canonical else {}
    missing = sorted(key for key, c in canonical.items() if c not in found)
    if missing:
        raise NotFound(f"no workload {', '.join(missing)}")
    return {key: found[c] for key, c in canonical.items()}


def _stored(session: Session, workload_id: str, feature_set: str, config_keys: list[str], *columns) -> Iterator:
    """Rows of `columns` for the stored features among `config_keys`, IN-lists of at most IN_CHUNK keys."""
    for start in range(0, len(config_keys), IN_CHUNK):
        yield from session.execute(select(*columns).where(
            ConfigFeatures.workload_id == workload_id, ConfigFeatures.feature_set == feature_set,
            ConfigFeatures.config_key.in_(config_keys[start:start + IN_CHUNK])))


def _insert_ignoring_duplicates(session: Session, values: list[dict]) -> int:
    """Bulk INSERT ... ON CONFLICT DO NOTHING: a concurrent writer of the same features is not an error."""
    if not values:
        return 0
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = insert(ConfigFeatures).on_conflict_do_nothing().returning(ConfigFeatures.id)
    return len(session.scalars(statement, values).all())
