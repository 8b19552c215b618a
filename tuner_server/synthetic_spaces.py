"""Seeded synthetic spaces with known structure, replayed like recorded ones (`tuner_server.replay`).

A recorded table tells how a strategy does on one kernel; a synthetic one is built to stress one thing a search can
get wrong, and is the same table for the same spec on every host (numpy's seeded PCG64, no floating-point reductions
whose order depends on the CPU). Every kind has 8-15 integer knobs of 2-8 choices each, a sparse subset of their
product is recorded (a "resource" constraint between two knobs cuts the rest, as template limits do; the product is
at most 3x the recorded configs, so most one-knob neighbours of a config are recorded too), and runtimes
are `BASE_S * exp(f(config))` with f in log-time:

    f = smooth * sum_k w_k (pos_k - pref_k)^2  +  interactions of knob pairs  +  min_j (offset_j + slope * d_j)

where pos_k is a knob's choice index scaled to [0, 1] and d_j the weighted Hamming distance to basin j's centre: each
basin is a local optimum under one-knob moves, offset_j says how good it is. The kinds:

- `smooth`: one basin and the separable bowl: what a model should win easily;
- `basins`: many basins, the best of them only slightly better than the others (offsets 0.06-0.3);
- `needle`: a broad basin whose best configs stay >= 8 % off, and a narrow one defined by a combination of three
  (or, with few choices per knob, more) knob values that only 1-3 % of the configs share; its best config is set
  7 % below every other config, so only the optimum is within 5 % (the case where a search that settles in one
  basin never finds it);
- `invalid`: about a third of the recorded configs fail (two regions of knob values plus scattered compile errors),
  and the best basin borders a failing region, as the fastest configs often sit at a resource edge;
- `noisy`: several basins, and each recorded runtime carries 4 % log-normal measurement noise (the table holds one
  noisy median per config, as a recorded one does; the optimum is the fastest recorded value).

`synthetic_table(spec)` builds the ReplayTable in memory; `save_synthetic(spec, path)` writes it as a table file.
`PRESETS` names the specs benchmarks/search_efficiency.py runs; `HELD_OUT`, `FRESH`, `LATER` and `NEWEST` the ones kept
apart from tuning defaults, and `GROUPS` the sets by the names `--synthetic` takes. A spec's name says all of it
(`synth-noisy-8k10-s31`: noisy, 8,000 configs, 10 knobs, seed 31; a size that is not whole thousands is written
exactly, `synth-noisy-8500x10-s31`), and `spec_from_name` reads one back exactly, so a space no default was ever
compared on is one name away, and each spec has one name.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from tuner_server.replay import ReplayTable, save_table, table_from_trials

KINDS = ("smooth", "basins", "needle", "invalid", "noisy")
BASE_S = 1e-4
VALUE_LADDERS = ((1, 2, 4, 8, 16, 32, 64, 128), (0, 1, 2, 3, 4, 5, 6, 7), (16, 32, 48, 64, 96, 128, 192, 256))


@dataclass(frozen=True)
class SyntheticSpec:
    """What to build: `configs` recorded configs over `knobs` knobs, landscape of `kind`, all drawn from `seed`."""

    kind: str
    seed: int = 0
    configs: int = 8000
    knobs: int = 10

    def __post_init__(self):
        for what, value in (("seed", self.seed), ("configs", self.configs), ("knobs", self.knobs)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"a synthetic space's {what} must be an int, got {type(value).__name__} {value!r}")
        if self.kind not in KINDS:
            raise ValueError(f"unknown synthetic space kind {self.kind!r}; known: {', '.join(KINDS)}")
        if not 8 <= self.knobs <= 15:
            raise ValueError(f"a synthetic space has 8-15 knobs, got {self.knobs}")
        if not 100 <= self.configs <= 50_000:
            raise ValueError(f"a synthetic space records 100-50,000 configs, got {self.configs}")
        if self.seed < 0:
            raise ValueError(f"a synthetic space's seed is at least 0, got {self.seed}")

    @property
    def name(self) -> str:
        """`synth-KIND-<thousands>k<knobs>-s<seed>` for whole thousands of configs, else `...-<configs>x<knobs>-...`."""
        size = f"{self.configs // 1000}k" if self.configs % 1000 == 0 else f"{self.configs}x"
        return f"synth-{self.kind}-{size}{self.knobs}-s{self.seed}"


NAME_FORM = ("synth-KIND-<thousands of configs>k<knobs>-s<seed> (synth-noisy-8k10-s31: 8,000 configs, 10 knobs, seed "
             "31), or for a number of configs not whole thousands synth-KIND-<configs>x<knobs>-s<seed> "
             "(synth-noisy-8500x10-s31)")
_NAME = re.compile(r"synth-(?P<kind>[a-z]+)-(?P<size>\d+)(?P<unit>[kx])(?P<knobs>\d+)-s(?P<seed>\d+)")


def spec_from_name(name: str) -> SyntheticSpec:
    """The spec whose `name` this is, exactly (`spec_from_name(spec.name) == spec`, and a spec has one name);
    ValueError naming the form and what is allowed."""
    match = _NAME.fullmatch(name)
    if match is None:
        raise ValueError(f"{name!r} is not a synthetic space name; the form is {NAME_FORM} (kinds: {', '.join(KINDS)})")
    configs = int(match["size"]) * (1000 if match["unit"] == "k" else 1)
    spec = SyntheticSpec(match["kind"], seed=int(match["seed"]), configs=configs, knobs=int(match["knobs"]))
    if spec.name != name:  # 8000x10 for 8k10, leading zeros: one spec, one name
        raise ValueError(f"{name!r} is not how its space is named: write {spec.name!r} (one name per space)")
    return spec


def _by_name(*specs: SyntheticSpec) -> dict[str, SyntheticSpec]:
    return {s.name: s for s in specs}


def _named(*names: str) -> dict[str, SyntheticSpec]:
    return {name: spec_from_name(name) for name in names}


PRESETS: dict[str, SyntheticSpec] = _by_name(
    SyntheticSpec("smooth", seed=1, configs=6000, knobs=9),
    SyntheticSpec("basins", seed=2, configs=12000, knobs=12),
    SyntheticSpec("needle", seed=3, configs=10000, knobs=11),
    SyntheticSpec("needle", seed=4, configs=20000, knobs=15),
    SyntheticSpec("invalid", seed=5, configs=15000, knobs=13),
    SyntheticSpec("noisy", seed=6, configs=5000, knobs=8),
)
# Spaces no default was tuned on: after a change to a strategy's defaults, these tell whether it generalises
# (benchmarks/search_efficiency.py --synthetic held-out).
HELD_OUT: dict[str, SyntheticSpec] = _by_name(
    SyntheticSpec("smooth", seed=11, configs=8000, knobs=10),
    SyntheticSpec("basins", seed=12, configs=10000, knobs=13),
    SyntheticSpec("needle", seed=13, configs=12000, knobs=12),
    SyntheticSpec("needle", seed=14, configs=8000, knobs=9),
    SyntheticSpec("invalid", seed=15, configs=9000, knobs=10),
    SyntheticSpec("noisy", seed=16, configs=7000, knobs=11),
)
# A second set, built on 2026-11-26 after the strategy's defaults had been compared on `HELD_OUT` too: the spaces a
# change is checked on last (benchmarks/search_efficiency.py --synthetic fresh). Two of each hard kind.
FRESH: dict[str, SyntheticSpec] = _by_name(
    SyntheticSpec("basins", seed=21, configs=9000, knobs=11),
    SyntheticSpec("needle", seed=22, configs=9000, knobs=10),
    SyntheticSpec("needle", seed=23, configs=15000, knobs=13),
    SyntheticSpec("invalid", seed=24, configs=11000, knobs=12),
    SyntheticSpec("noisy", seed=25, configs=6000, knobs=9),
    SyntheticSpec("noisy", seed=26, configs=10000, knobs=12),
)
# Eight named on 2026-11-27 after every default had been chosen and run once untuned; every change since has been
# compared on them too (with the three sets above and the recorded tables: the 48-space report).
LATER: dict[str, SyntheticSpec] = _named(
    "synth-smooth-7k11-s31", "synth-basins-11k12-s32", "synth-needle-9k11-s33", "synth-needle-14k12-s34",
    "synth-invalid-10k11-s35", "synth-noisy-8k10-s36", "synth-noisy-12k13-s37", "synth-basins-6k10-s38")
# Eight named on 2026-11-28, after every default had been chosen: where a change is checked last.
NEWEST: dict[str, SyntheticSpec] = _named(
    "synth-basins-10k12-s51", "synth-needle-11k11-s52", "synth-noisy-9k11-s53", "synth-smooth-8k11-s54",
    "synth-invalid-12k12-s55", "synth-basins-7k10-s56", "synth-needle-13k12-s57", "synth-noisy-11k12-s58")
# Eight named on 2026-11-28 before the late GP (`gp_settle`) was run on them: where that change is checked last.
LATE_GP_CHECK: dict[str, SyntheticSpec] = _named(
    "synth-needle-12k11-s61", "synth-basins-9k12-s62", "synth-noisy-8k11-s63", "synth-invalid-11k11-s64",
    "synth-needle-9k10-s65", "synth-basins-12k13-s66", "synth-noisy-10k10-s67", "synth-smooth-9k12-s68")
# What `--synthetic` of benchmarks/search_efficiency.py accepts besides names: each set, and their unions.
GROUPS: dict[str, dict[str, SyntheticSpec]] = {
    "all": PRESETS, "held-out": HELD_OUT, "fresh": FRESH, "later": LATER, "newest": NEWEST,
    "late-gp-check": LATE_GP_CHECK,
    "every": PRESETS | HELD_OUT | FRESH,  # the 18 of the 2026-11-26 tables
    "report": PRESETS | HELD_OUT | FRESH | LATER,  # the 26 synthetic spaces of the 48-space report
    "none": {},
}


def _knob_sizes(rng: np.random.Generator, knobs: int, configs: int) -> list[int]:
    """Choice counts (2-8) whose product is 2-6x the recorded configs: the recorded set is dense, so most
    one-knob neighbours of a config are recorded too, as in exhaustively tuned spaces."""
    sizes = [int(rng.integers(2, 9)) for _ in range(knobs)]
    while np.prod(sizes, dtype=np.float64) > 6 * configs and max(sizes) > 2:
        sizes[int(rng.choice([i for i, n in enumerate(sizes) if n > 2]))] -= 1
    while np.prod(sizes, dtype=np.float64) < 2 * configs and min(sizes) < 8:
        sizes[int(rng.choice([i for i, n in enumerate(sizes) if n < 8]))] += 1
    return sizes


def _record_indices(rng: np.random.Generator, sizes: list[int], configs: int, resource: tuple[int, int]) -> np.ndarray:
    """`configs` index vectors of the product: a resource constraint (the scaled positions of knobs a and b may not
    sum past a threshold) cuts the product to at least `configs`, then a uniform subsample (the configs a template
    refuses to build) leaves exactly that many, in the product's order."""
    grid = np.indices(sizes, dtype=np.int8).reshape(len(sizes), -1).T
    pos = grid / (np.asarray(sizes) - 1)
    load = pos[:, resource[0]] + pos[:, resource[1]]
    keep_at_least = max(configs, int(0.6 * len(load)))  # the constraint cuts at most 40 %
    grid = grid[load <= np.sort(load)[min(keep_at_least, len(load)) - 1]]
    keep = np.sort(rng.choice(len(grid), size=min(configs, len(grid)), replace=False))
    return grid[keep]


def _landscape(rng: np.random.Generator, kind: str, idx: np.ndarray, sizes: list[int]) -> np.ndarray:
    """f (log-time) of every recorded config."""
    n, k = idx.shape
    pos = idx / (np.asarray(sizes) - 1)
    weights = rng.uniform(0.2, 1.0, size=k)
    bowl = ((pos - rng.uniform(0, 1, size=k)) ** 2 * weights).sum(axis=1)
    pairs = rng.choice(k, size=(k // 3, 2), replace=True)
    tables = [rng.uniform(-1, 1, size=(sizes[p], sizes[q])) for p, q in pairs]
    mixed = sum(t[idx[:, p], idx[:, q]] for t, (p, q) in zip(tables, pairs, strict=True)) / max(len(tables), 1)
    smooth = {"smooth": 1.0, "basins": 0.25, "needle": 0.2, "invalid": 0.4, "noisy": 0.3}[kind]
    f = smooth * bowl + 0.08 * mixed
    n_basins = {"smooth": 1, "basins": 12, "needle": 1, "invalid": 4, "noisy": 6}[kind]
    offsets = np.concatenate([[0.0], rng.uniform(0.06, 0.3, size=n_basins - 1)])
    basin_terms = []
    for offset in offsets:
        centre = idx[rng.integers(n)]
        knob_w = rng.uniform(0.5, 1.5, size=k)
        distance = ((idx != centre) * knob_w).sum(axis=1) / knob_w.sum()
        basin_terms.append(offset + 1.2 * distance)
    return f + np.min(np.stack(basin_terms), axis=0)


def _needle(rng: np.random.Generator, f: np.ndarray, idx: np.ndarray, sizes: list[int]) -> np.ndarray:
    """The needle kind's narrow basin: configs sharing three knob values; only its best is within 5 %."""
    k = idx.shape[1]
    f = f - f.min() + 0.08  # the broad basin's best stays 8 % off the needle
    for tries in range(400):  # three knobs' values, more when three cover too many configs (binary knobs)
        knobs = rng.choice(k, size=min(3 + tries // 50, k), replace=False)
        values = np.array([rng.integers(sizes[j]) for j in knobs])
        inside = np.all(idx[:, knobs] == values, axis=1)
        if 0.008 * len(idx) <= inside.sum() <= 0.03 * len(idx):
            break
    centre = idx[np.flatnonzero(inside)[rng.integers(inside.sum())]]
    distance = (idx != centre).mean(axis=1)
    f = np.where(inside, np.minimum(f, 0.02 + 0.9 * distance), f)
    best = int(np.argmin(f))
    rest = np.delete(f, best)
    f[best] = rest.min() - np.log(1.07)  # every other config is >= 7 % slower
    return f


def _failures(rng: np.random.Generator, kind: str, f: np.ndarray, idx: np.ndarray, sizes: list[int]) -> np.ndarray:
    """Status per config: for `invalid`, two failing regions (one just past the best config's values of two knobs)
    and 6 % scattered compile errors; else 2 % scattered compile errors. The landscape's optimum always runs."""
    status = np.full(len(idx), "OK", dtype=object)
    scattered = 0.02
    if kind == "invalid":
        scattered = 0.06
        best = idx[int(np.argmin(f))]
        a, b, c, d = rng.choice(idx.shape[1], size=4, replace=False)
        edge = (idx[:, a] > best[a]) & (idx[:, b] >= best[b])  # the best sits at this region's edge
        status[edge] = "RUNTIME_ERROR"
        corner = (idx[:, c] >= sizes[c] // 2) & (idx[:, d] >= sizes[d] // 2)
        status[corner & ~edge] = "RESOURCE_EXCEEDED"
    status[(rng.random(len(idx)) < scattered) & (status == "OK")] = "COMPILE_ERROR"
    status[int(np.argmin(f))] = "OK"
    return status


def synthetic_trials(spec: SyntheticSpec) -> tuple[dict, list[dict]]:
    """The table's meta and trials (config, median_s, status) for `spec`."""
    rng = np.random.default_rng([spec.seed, KINDS.index(spec.kind), spec.configs, spec.knobs])
    sizes = _knob_sizes(rng, spec.knobs, spec.configs)
    ladders = [VALUE_LADDERS[int(rng.integers(len(VALUE_LADDERS)))][:n] for n in sizes]
    resource = tuple(int(v) for v in rng.choice(spec.knobs, size=2, replace=False))
    idx = _record_indices(rng, sizes, spec.configs, resource)
    f = _landscape(rng, spec.kind, idx, sizes)
    if spec.kind == "needle":
        f = _needle(rng, f, idx, sizes)
    if spec.kind == "noisy":
        f = f + rng.normal(0.0, 0.04, size=len(f))
    status = _failures(rng, spec.kind, f, idx, sizes)
    names = [f"k{i}" for i in range(spec.knobs)]
    trials = []
    for row, value, state in zip(idx, f, status, strict=True):
        config = {name: ladders[j][int(row[j])] for j, name in enumerate(names)}
        trials.append({"config": config, "median_s": float(BASE_S * np.exp(value)) if state == "OK" else None,
                       "status": state})
    meta = {"name": spec.name, "source": "synthetic", "spec": asdict(spec), "workload_key": None}
    return meta, trials


def synthetic_table(spec: SyntheticSpec) -> ReplayTable:
    meta, trials = synthetic_trials(spec)
    return table_from_trials(meta, trials)


def save_synthetic(spec: SyntheticSpec, path: str | Path) -> Path:
    meta, trials = synthetic_trials(spec)
    return save_table(path, meta, trials)
