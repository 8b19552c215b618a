"""One cost model per device class, trained on every trial the farm made on that class, kept in the database.

`ClassModels` runs beside the job driver, in its own thread, so no job's search ever pays for it. Each pass, per
device class with trials:

1. the trials' feature vectors come from the `config_features` table; those missing are lowered (in the
   `FeaturePool` when there is one, so the pass itself never lowers) and stored once ready;
2. when the trials with features grew by `growth` since the last fit (and there are at least `min_trials`), a new
   model is fitted from scratch on all of them (bounded rounds; queries = workloads) and appended to `cost_models`.

A restarted tuner loads each class's newest model from the database on first use. Model-guided jobs start from
`model(device_class)` (transfer) and fine-tune it on their own trials.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

import compiler_core as cc
from compiler_core.features import FEATURE_NAMES
from compiler_core.space import config_key
from tuner_server import repo
from tuner_server.background import PeriodicThread
from tuner_server.cost_model import (
    CostModel,
    FeatureCache,
    LoweredFeatures,
    ModelFormatError,
    ranking_data,
    shared_cache,
)
from tuner_server.cost_model.featurize import feature_set
from tuner_server.db import session_scope
from tuner_server.db.models import Trial
from tuner_server.device_class import device_kind
from tuner_server.targets import target_for_class

log = logging.getLogger(__name__)

# Below this many trials of its own, a class's jobs start from the model of another class of its kind that saw more
# (cross-device warm start); measured on recorded spaces in benchmarks/cross_device.py.
OWN_HISTORY = 200


@dataclass
class _Kept:
    feature_set: str
    model: CostModel | None
    trained_on: int
    version: int


class StartModel(NamedTuple):
    """A class model a job starts from, and which one it is (what the job's record says: `record`)."""

    model: CostModel
    device_class: str  # the class it was trained on: the job's own, or a donor of the same kind
    version: int
    trained_on: int

    @classmethod
    def of(cls, kept: _Kept, device_class: str) -> StartModel:
        return cls(kept.model, device_class, kept.version, kept.trained_on)

    def record(self) -> dict:
        return {"device_class": self.device_class, "version": self.version, "trained_on": self.trained_on}


@dataclass
class PassSummary:
    """What one pass did, per class: vectors stored, models fitted."""

    stored: dict[str, int]
    fitted: dict[str, int]


class ClassModels:
    def __init__(self, session_factory: sessionmaker[Session], *, pool=None, interval_s: float = 5.0,
                 growth: float = 0.1, min_trials: int = 16, rounds: int = 60, objective: str = "rank_xendcg",
                 limit: int = 50_000, cache: FeatureCache | None = None):
        self._sessions, self.pool = session_factory, pool
        self.cache = cache if cache is not None else shared_cache()  # the one the jobs' strategies read
        self.interval_s, self.growth, self.min_trials = interval_s, growth, min_trials
        self.rounds, self.objective, self.limit = rounds, objective, limit
        self._kept: dict[str, _Kept] = {}
        self._lock = threading.Lock()
        self._loop = PeriodicThread(self.refresh, "tunefarm-class-models", interval_s)
        self.fit_s = 0.0  # seconds spent fitting class models since start (what the tuner's overhead amortizes)
        self.fits = 0

    # ---- lifecycle ------------------------------------------------------------------------------------------
    def start(self) -> None:
        self._loop.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._loop.stop(timeout_s)

    # ---- what jobs use --------------------------------------------------------------------------------------
    def model(self, device_class: str) -> CostModel | None:
        """The class's newest model (from the database after a restart), or None while it has none."""
        with self._lock:
            kept = self._kept.get(device_class)
        if kept is None:
            kept = self._load(device_class)
        return kept.model if kept is not None else None

    def start_model(self, device_class: str) -> StartModel | None:
        """The model a job on `device_class` starts from: the class's own while it has seen at least OWN_HISTORY
        trials; below that, another class of the same kind whose model saw more (its features carry each target's
        figures, so it ranks this class's configs too; the job fine-tunes it on its own trials). None when no class
        of the kind has a model."""
        with self._lock:
            own = self._kept.get(device_class)
        own = own if own is not None else self._load(device_class)
        if own is not None and own.trained_on >= OWN_HISTORY:
            return StartModel.of(own, device_class)
        donor = self._donor(device_class, own.trained_on if own is not None else 0)
        if donor is not None:
            return donor
        return StartModel.of(own, device_class) if own is not None and own.model is not None else None

    def _donor(self, device_class: str, more_than: int) -> StartModel | None:
        """The newest model of the class of `device_class`'s kind (not itself) that saw the most trials."""
        kind = device_kind(device_class)
        with session_scope(self._sessions) as s:
            records = [r for r in repo.list_cost_models(session=s) if r.device_class != device_class
                       and device_kind(r.device_class) == kind and r.trained_on > more_than]
        newest: dict[str, int] = {}
        for r in records:  # newest first: each class's first record is its newest
            newest.setdefault(r.device_class, r.trained_on)
        for donor, _ in sorted(newest.items(), key=lambda item: (-item[1], item[0])):
            kept = self._load(donor)  # None when its model is of another compiler_core
            if kept is not None and kept.model is not None:
                return StartModel.of(kept, donor)
        return None

    def warm_cache(self, device_class: str, workload_key: str, configs: list[dict]) -> int:
        """Put the stored vectors of `configs` into the shared feature cache (a job rebuilt after a restart finds
        its trials' features there instead of lowering them again); returns how many were found."""
        target = self._target(device_class)
        if target is None:
            return 0
        fs, keys = feature_set(target), {config_key(c) for c in configs}
        with session_scope(self._sessions) as s:
            found = repo.get_features(workload_key, fs, sorted(keys), session=s)
        prefix = LoweredFeatures.cache_prefix(workload_key, target)
        for key, blob in found.items():
            self.cache.put((prefix, key), np.frombuffer(blob, np.float32))
        return len(found)

    def _target(self, device_class: str):
        """The class's registered compiler target, None while it has none."""
        with session_scope(self._sessions) as s:
            try:
                return target_for_class(device_class, session=s)
            except LookupError:
                return None

    def _load(self, device_class: str) -> _Kept | None:
        target = self._target(device_class)
        if target is None:
            return None
        fs = feature_set(target)
        with session_scope(self._sessions) as s:
            record = repo.latest_cost_model(device_class, fs, session=s)
            if record is None:
                return None
            try:
                model = CostModel.from_bytes(record.blob, FEATURE_NAMES)
            except ModelFormatError as exc:
                log.warning("ignoring stored model v%d of %s: %s", record.version, device_class, exc)
                return None
            kept = _Kept(fs, model, record.trained_on, record.version)
        with self._lock:
            self._kept.setdefault(device_class, kept)
            return self._kept[device_class]

    # ---- a pass ---------------------------------------------------------------------------------------------
    def refresh(self) -> PassSummary:
        """One pass over every device class with trials (see the module docstring)."""
        summary = PassSummary({}, {})
        with session_scope(self._sessions) as s:
            classes = list(s.scalars(select(Trial.device_class).distinct()))
        for device_class in classes:
            target = self._target(device_class)
            if target is None:
                continue  # a class without a registered target (imported history, a test double's): no features
            stored, fitted = self._refresh_class(device_class, target)
            summary.stored[device_class] = stored
            if fitted:
                summary.fitted[device_class] = fitted
        return summary

    def _refresh_class(self, device_class: str, target: cc.Target) -> tuple[int, int]:
        fs = feature_set(target)
        with session_scope(self._sessions) as s:
            rows = repo.class_training_trials(device_class, fs, session=s, limit=self.limit)
        vectors, new = self._vectors(rows, target, fs)
        if new:
            with session_scope(self._sessions) as s:
                repo.put_features(new, session=s)
        usable = [(r, v) for r, v in zip(rows, vectors, strict=True) if v is not None]
        kept = self._kept.get(device_class) or self._load(device_class)
        trained_on = kept.trained_on if kept is not None and kept.feature_set == fs else 0
        if len(usable) < self.min_trials or len(usable) < max(trained_on * (1 + self.growth), trained_on + 1):
            return len(new), 0
        model, workloads = self._fit(usable)
        if model is None:
            return len(new), 0
        with session_scope(self._sessions) as s:
            record = repo.save_cost_model(device_class, fs, model.to_bytes(), objective=self.objective,
                                          trained_on=len(usable), workloads=workloads,
                                          newest_trial_at=max(r.created_at for r, _ in usable), fit_s=model.fit_s,
                                          session=s)
            version = record.version
        with self._lock:
            self._kept[device_class] = _Kept(fs, model, len(usable), version)
        return len(new), len(usable)

    def _vectors(self, rows, target, fs: str) -> tuple[list[np.ndarray | None], list[tuple[str, str, str, bytes]]]:
        """Each row's vector (None while it is being lowered) and the (workload, set, config, bytes) to store."""
        vectors: list[np.ndarray | None] = []
        new: list[tuple[str, str, str, bytes]] = []
        featurizers: dict[str, LoweredFeatures | None] = {}
        ask: dict[str, list[dict]] = {}
        for row in rows:
            if row.vector is not None:
                vectors.append(np.frombuffer(row.vector, np.float32))
                continue
            if row.workload_key not in featurizers:
                try:
                    featurizers[row.workload_key] = LoweredFeatures(row.workload_key, target, self.cache,
                                                                    self.pool)
                except Exception:  # noqa: BLE001 - a workload compiler_core no longer parses: no features
                    featurizers[row.workload_key] = None
            features = featurizers[row.workload_key]
            if features is None:
                vectors.append(None)
            elif features.asynchronous and not features.cached(row.config):
                ask.setdefault(row.workload_key, []).append(row.config)
                vectors.append(None)
            else:
                vec = features([row.config])[0]
                vectors.append(vec)
                new.append((row.workload_key, fs, row.config_key, vec.astype(np.float32).tobytes()))
        for key, configs in ask.items():
            featurizers[key].prefetch(configs)
        unique = {(w, f, c): b for w, f, c, b in new}  # a config measured twice is stored once
        return vectors, [(w, f, c, b) for (w, f, c), b in unique.items()]

    def _fit(self, usable) -> tuple[CostModel | None, int]:
        by_workload: dict[str, dict[str, tuple]] = {}
        for row, vec in usable:  # oldest first: a config measured twice keeps its newest trial
            by_workload.setdefault(row.workload_key, {})[row.config_key] = (vec, row.median_s, row.status)
        groups = [(np.stack([v for v, _, _ in items.values()]), [m for _, m, _ in items.values()],
                   [st for _, _, st in items.values()]) for items in by_workload.values()]
        t0 = time.perf_counter()
        model = CostModel(FEATURE_NAMES, self.objective).fit(ranking_data(groups), self.rounds)
        self.fit_s += time.perf_counter() - t0
        self.fits += 1
        return (model if model.trained else None), len(by_workload)
