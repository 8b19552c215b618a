"""Config features for the cost model, and the cache that keeps them (lowering a config costs milliseconds).

- `LoweredFeatures(workload_key, target)`: compiler_core's lowered-IR feature vector (`compiler_core.features`,
  which already carries the workload's descriptors: op, flops, bytes), so one model ranks configs of any workload
  and op of a device class. A config that cannot be lowered gets a row of NaN (the model never trains on it).
  Given a `FeaturePool` it is asynchronous: `prefetch` lowers in worker processes and callers use only what is
  `cached` (the tuner's search); without one, calling it lowers inline (benchmarks, tests, tools).
- `KnobFeatures(space)`: the knob values themselves (numbers as they are, other values as their choice index):
  for spaces with no compiler_core workload behind them (e.g. a Kernel Tuner cache). Trees do not care about
  monotone transforms, so raw values are enough. Cheap: no cache.

`FeatureCache` maps (featurizer key, config key) to a vector, least recently used out first; `shared_cache()` is the
process-wide one strategies use unless given another. `to_bytes()`/`from_bytes()` let a caller persist it.
"""
from __future__ import annotations

import hashlib
import io
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

import compiler_core as cc
from compiler_core.features import FEATURE_NAMES
from compiler_core.space import Space, config_id, config_key

DEFAULT_MAX_ENTRIES = 250_000  # ~100 MB of float32 vectors


class FeatureCache:
    """A bounded LRU map (featurizer key, config key) -> float32 vector; safe to share between threads."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES):
        self.max_entries = max_entries
        self._data: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key: tuple[str, str]) -> np.ndarray | None:
        with self._lock:
            vec = self._data.get(key)
            if vec is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return vec

    def put(self, key: tuple[str, str], vec: np.ndarray) -> None:
        with self._lock:
            self._data[key] = vec
            self._data.move_to_end(key)
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)

    def forget(self, prefix: str) -> int:
        """Drop every vector of one featurizer (`LoweredFeatures.cache_prefix`); returns how many."""
        with self._lock:
            keys = [key for key in self._data if key[0] == prefix]
            for key in keys:
                del self._data[key]
        return len(keys)

    def __contains__(self, key: tuple[str, str]) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def to_bytes(self) -> bytes:
        keys = list(self._data)
        buf = io.BytesIO()
        vectors = np.stack([self._data[k] for k in keys]) if keys else np.zeros((0, 0), np.float32)
        np.savez_compressed(buf, keys=np.array(json.dumps(keys)), vectors=vectors)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, blob: bytes, max_entries: int = DEFAULT_MAX_ENTRIES) -> FeatureCache:
        with np.load(io.BytesIO(blob), allow_pickle=False) as data:
            keys, vectors = json.loads(str(data["keys"])), data["vectors"]
        cache = cls(max_entries)
        for key, vec in zip(keys, vectors, strict=True):
            cache.put(tuple(key), vec)
        return cache


_SHARED = FeatureCache()


def shared_cache() -> FeatureCache:
    return _SHARED


def target_key(target) -> str:
    """What of the target the features read: template-rendered kernels' waves and grids depend on the SM count,
    shared-memory fractions on the opt-in limit (an H100 SXM and PCIe share an arch, not their vectors)."""
    return (f"{target.kind}:{target.arch}:{target.cores}:{target.vector_bytes}:{target.sm_count}"
            f":{target.shared_limit}")


def feature_set(target) -> str:
    """Names the vectors LoweredFeatures makes on `target`: they change with the target, compiler_core's code and the
    feature layout, and stored vectors or models of another set are never mixed with these."""
    text = "\n".join((target_key(target), cc.codegen_version(), *FEATURE_NAMES))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class LoweredFeatures:
    """Lowered-IR features of configs of one workload on one target, through a FeatureCache."""

    names = FEATURE_NAMES
    cheap = False

    def __init__(self, workload_key: str, target, cache: FeatureCache | None = None, pool=None):
        self.workload = cc.parse_key(workload_key)
        self.target = target
        self.cache = cache if cache is not None else shared_cache()
        self.pool = pool  # a FeaturePool: lower in the background instead of inline
        self._config_keys: dict[tuple, str] = {}
        self.key = self.cache_prefix(self.workload.key, target)
        self.computed = 0  # vectors this featurizer lowered itself (cache misses) ...
        self.lowering_s = 0.0  # ... and the seconds that took

    @staticmethod
    def cache_prefix(workload_key: str, target) -> str:
        """The first half of this featurizer's cache keys (the second is the config key)."""
        return f"{workload_key}@{target_key(target)}"

    @property
    def asynchronous(self) -> bool:
        return self.pool is not None

    def config_key(self, config: dict) -> str:
        """compiler_core's config key, remembered per config (a JSON dump costs more than the lookup)."""
        ident = config_id(config)
        key = self._config_keys.get(ident)
        if key is None:
            key = self._config_keys[ident] = config_key(config)
        return key

    def cached(self, config: dict) -> bool:
        return (self.key, self.config_key(config)) in self.cache

    def prefetch(self, configs: Sequence[dict]) -> None:
        """Start lowering `configs` in the pool (no-op without one: calling the featurizer lowers inline)."""
        if self.pool is not None and configs:
            self.pool.request(self, list(configs))

    def vector(self, config: dict) -> np.ndarray:
        key = (self.key, self.config_key(config))
        vec = self.cache.get(key)
        if vec is None:
            t0 = time.perf_counter()
            try:
                vec = cc.features(self.workload, config, self.target).astype(np.float32)
            except Exception:  # noqa: BLE001 - a config that cannot be lowered scores as missing, not as a crash
                vec = np.full(len(FEATURE_NAMES), np.nan, np.float32)
            self.computed += 1
            self.lowering_s += time.perf_counter() - t0
            self.cache.put(key, vec)
        return vec

    def __call__(self, configs: Sequence[dict]) -> np.ndarray:
        if not configs:
            return np.zeros((0, len(FEATURE_NAMES)), np.float32)
        return np.stack([self.vector(c) for c in configs])


class KnobFeatures:
    """Knob values as features (numbers as is, anything else as its index among the knob's choices)."""

    cheap = True
    asynchronous = False

    def __init__(self, space: Space):
        self.knobs = [k.name for k in space.knobs]
        self.names = tuple(f"knob.{n}" for n in self.knobs)
        self._codes = [None if all(_is_number(v) for v in k.choices) else {v: float(i) for i, v in
                                                                              enumerate(k.choices)}
                       for k in space.knobs]
        self.key = "knobs:" + ",".join(self.knobs)

    def cached(self, config: dict) -> bool:
        return True

    def prefetch(self, configs: Sequence[dict]) -> None:
        pass

    def __call__(self, configs: Sequence[dict]) -> np.ndarray:
        out = np.empty((len(configs), len(self.knobs)), np.float32)
        for i, config in enumerate(configs):
            for j, (name, codes) in enumerate(zip(self.knobs, self._codes, strict=True)):
                value = config[name]
                out[i, j] = float(value) if codes is None else codes.get(value, -1.0)
        return out


class BothFeatures:
    """Lowered-IR features followed by the knob values: what tells one workload's configs apart exactly, beside what
    the IR says about them (a config that cannot be lowered keeps its knob values; its lowered part is NaN)."""

    cheap = False

    def __init__(self, lowered: LoweredFeatures, knobs: KnobFeatures):
        self.lowered, self.knobs = lowered, knobs
        self.names = tuple(lowered.names) + knobs.names
        self.key = f"{lowered.key}+{knobs.key}"

    @property
    def asynchronous(self) -> bool:
        return self.lowered.asynchronous

    @property
    def computed(self) -> int:
        return self.lowered.computed

    def cached(self, config: dict) -> bool:
        return self.lowered.cached(config)

    def prefetch(self, configs: Sequence[dict]) -> None:
        self.lowered.prefetch(configs)

    def __call__(self, configs: Sequence[dict]) -> np.ndarray:
        return np.hstack([self.lowered(configs), self.knobs(configs)])


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def featurizer_for(space: Space, workload_key: str | None, target, cache: FeatureCache | None = None, pool=None):
    """Lowered-IR features when the workload and target are known (asynchronous with a FeaturePool), else knob
    features."""
    if workload_key is not None and target is not None:
        return LoweredFeatures(workload_key, target, cache, pool)
    return KnobFeatures(space)
