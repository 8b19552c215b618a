"""Answers for shapes nobody tuned: the config a device class's cost model ranks best (GET /v1/best?predict=true).

A class's model (class_models.py) is trained on every trial the farm made on that class, across workloads, on
lowered-IR features; so it can rank configs of a workload it never measured. The candidates it ranks:

1. the heads of the same op on the class (what won on other shapes), where they are valid for this shape;
2. the template's untuned default;
3. seeded random samples of the space, up to `candidates` in all (the whole space when it is that small).

The answer is the best-ranked candidate that lowers, passes the target's resource checks and generates source
(`cc.generate`): it compiles on the class's target as far as the tuner can tell without a device. It is never a
measurement and says so: `Prediction` carries the model's version and training size.
"""
from __future__ import annotations

import random
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from sqlalchemy.orm import Session

import compiler_core as cc
from compiler_core.features import FEATURE_NAMES
from compiler_core.space import config_key
from tuner_server import repo
from tuner_server.cost_model import CostModel, LoweredFeatures, ModelFormatError, shared_cache
from tuner_server.cost_model.featurize import feature_set
from tuner_server.repo import schedules

DEFAULT_CANDIDATES = 128  # ~15 ms of lowering each (cached afterwards): a first answer in about 2 s
MAX_CANDIDATES = 1024
MAX_PEER_HEADS = 64


class NoModel(LookupError):
    """The device class has no cost model yet (too few trials), or none for this compiler_core."""


class NothingBuilds(ValueError):
    """No ranked candidate generates for the target."""


@dataclass(frozen=True)
class Prediction:
    config: dict
    score: float  # the model's ranking score (higher: predicted faster); only comparable within one answer
    model_version: int
    trained_on: int  # trials the model was fitted on
    trained_workloads: int  # distinct workloads among them
    feature_set: str
    scored: int  # candidates the model ranked
    from_peer_heads: int  # ... of which heads of other shapes
    space_size: int  # configs in the space's knob product (the valid ones are a subset)


def candidates(workload: cc.Workload, target, peer_configs: Sequence[dict], limit: int, seed: int = 0,
               pool: Sequence[dict] | None = None) -> tuple:
    """(configs to rank, how many came from peers): peers valid here first, then the default, then samples of
    `pool` (the space when None; a recorded table's configs in benchmarks/predict_unseen.py)."""
    space = cc.get_space(workload, target)
    out: dict[str, dict] = {}
    names = set(space.names)
    for config in peer_configs:
        if len(out) < limit and set(config) == names and space.is_valid(config):
            out.setdefault(config_key(config), dict(config))
    peers = len(out)
    default = cc.default_config(workload, target)
    out.setdefault(config_key(default), default)
    if len(out) < limit:
        if pool is not None:
            drawn = random.Random(seed).sample(list(pool), min(limit, len(pool)))
        else:
            drawn = list(space) if space.size <= limit else space.sample(random.Random(seed), limit)
        for config in drawn:
            if len(out) >= limit:
                break
            out.setdefault(config_key(config), config)
    return list(out.values())[:max(limit, 1)], peers


def rank(model: CostModel, featurize: Callable[[Sequence[dict]], np.ndarray], configs: Sequence[dict]) -> list:
    """(score, config) best first; configs that cannot be lowered (NaN features) are left out."""
    if not configs:
        return []
    X = featurize(configs)
    scores = model.predict(X)
    usable = ~np.all(np.isnan(X), axis=1)
    order = np.argsort(-scores, kind="stable")
    return [(float(scores[i]), configs[i]) for i in order if usable[i] and np.isfinite(scores[i])]


def first_that_builds(workload: cc.Workload, target, ranked: list) -> tuple[float, dict]:
    for score, config in ranked:
        try:
            cc.generate(workload, config, target)
        except (cc.ConfigError, cc.ResourceError, cc.WorkloadError):
            continue
        return score, config
    raise NothingBuilds(f"none of the {len(ranked)} ranked configs of {workload.key} generates for {target.arch}")


# ---- the server's side: the class's newest stored model, kept per version -----------------------------------
_models: OrderedDict[tuple, CostModel] = OrderedDict()
_answers: OrderedDict[tuple, Prediction] = OrderedDict()
_lock = threading.Lock()
_KEEP = 16


def _remember(cache: OrderedDict, key: tuple, value):
    with _lock:
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > _KEEP:
            cache.popitem(last=False)
    return value


def predict(workload: cc.Workload, device_class: str, target, *, session: Session,
            limit: int = DEFAULT_CANDIDATES) -> Prediction:
    """The class model's best config for `workload` (see the module docstring); NoModel or NothingBuilds."""
    fs = feature_set(target)
    record = repo.latest_cost_model(device_class, fs, session=session)
    if record is None:
        raise NoModel(f"device class {device_class} has no cost model for this compiler_core "
                      f"({cc.codegen_version()}) yet: the farm fits one once the class has enough trials")
    answer_key = (workload.key, device_class, fs, record.version, limit)
    with _lock:
        known = _answers.get(answer_key)
    if known is not None:
        return known
    model_key = (device_class, fs, record.version)
    with _lock:
        model = _models.get(model_key)
    if model is None:
        try:
            model = _remember(_models, model_key, CostModel.from_bytes(record.blob, FEATURE_NAMES))
        except ModelFormatError as exc:
            raise NoModel(f"the newest model of {device_class} cannot be read here: {exc}") from exc
    peers = [c for key, c in schedules.head_configs(workload.op, device_class, session=session,
                                                    limit=MAX_PEER_HEADS) if key != workload.key]
    configs, from_peers = candidates(workload, target, peers, limit)
    featurize = LoweredFeatures(workload.key, target, shared_cache())
    score, config = first_that_builds(workload, target, rank(model, featurize, configs))
    answer = Prediction(config, score, record.version, record.trained_on, record.workloads, fs, len(configs),
                        from_peers, cc.get_space(workload, target).size)
    return _remember(_answers, answer_key, answer)
