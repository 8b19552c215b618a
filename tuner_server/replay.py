"""Replay: a device backend that answers measurements from a recorded table, so strategies run with no hardware.

A `ReplayTable` maps config keys to what a device measured (median runtime, or an error status). Its `space` has the
recorded knob values as choices and one constraint, "recorded", so a strategy only ever proposes configs the table
can answer; `measure(config)` is a lookup, deterministic. Two formats load:

- our tables, `benchmarks/data/<name>.json.gz` (gzip JSON, written by benchmarks/record_space.py and `save_table`):
  `{"meta": {op, params, workload_key, device, device_class, date, codegen_version, target, ...},
  "trials": [{"config": {...}, "median_s": float | null, "status": "OK" | "COMPILE_ERROR" | ...}]}` (knob values
  numbers, strings, booleans or null, no two of a knob's equal in Python (1 and True, 1 and 1.0); median_s null or a
  positive number of seconds, and given for an OK trial);
- Kernel Tuner cache files (`tune_kernel(..., cache=...)`): a JSON object with "tune_params_keys", "tune_params" and
  "cache", which maps the comma-joined parameter values to a record whose "time" is the runtime in milliseconds or
  an error name (InvalidConfig, CompilationFailedConfig, RuntimeFailedConfig). A cache Kernel Tuner left open
  (still running, so without its closing braces) loads too.

A table that breaks these rules is refused when it loads: a ReplayError names the file, the entry (`trials[i]` and
its text, or the cache key) and what is wrong.

`run_strategy` drives any strategy of `tuner_server.search` against a table and returns what it observed, in order.
"""
from __future__ import annotations

import glob
import gzip
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from compiler_core.space import Constraint, Knob, Space, config_key
from tuner_server.search import Observation, StrategyContext, make_strategy
from tuner_server.search.base import OK, TransferTrial

KT_ERRORS = {"InvalidConfig": "RESOURCE_EXCEEDED", "CompilationFailedConfig": "COMPILE_ERROR",
             "RuntimeFailedConfig": "RUNTIME_ERROR"}
KT_FAILED_TIME = 1e20  # old Kernel Tuner versions wrote this instead of an error name


class ReplayError(ValueError):
    """A table or cache file that cannot be read as one."""


@dataclass
class ReplayTable:
    """Recorded measurements of one workload on one device: config key -> Observation."""

    meta: dict
    results: dict[str, Observation]
    space: Space = field(init=False)

    def __post_init__(self):
        if not self.results:
            raise ReplayError("a replay table needs at least one recorded config")
        self.space = recorded_space(self.results)

    def measure(self, config: dict) -> Observation:
        """What the device measured for `config`; a config never recorded comes back as a COMPILE_ERROR."""
        found = self.results.get(config_key(config))
        return found if found is not None else Observation(dict(config), None, "COMPILE_ERROR")

    @property
    def optimum(self) -> float | None:
        """The fastest recorded runtime (seconds), None when every config failed."""
        times = [o.median_s for o in self.results.values() if o.status == OK and o.median_s is not None]
        return min(times) if times else None

    @property
    def workload_key(self) -> str | None:
        return self.meta.get("workload_key")

    def target(self):
        """The compiler_core Target the table was recorded for (None for foreign tables)."""
        if "target" not in self.meta:
            return None
        from compiler_core.target import Target, cuda_target

        recorded = dict(self.meta["target"])
        # Tables recorded before the Target grew a field (register_file, dynamic shared memory, ...) lack it; the
        # arch's own figures fill it instead of the dataclass's 0, which no kernel would fit.
        arch_defaults = cuda_target(recorded["arch"]).to_dict() if recorded.get("kind") == "cuda" else {}
        return Target.from_dict({**arch_defaults, **recorded})

    def transfer_trials(self) -> list[TransferTrial]:
        """The table as history of another workload, for a strategy's transfer learning."""
        key = self.workload_key or self.meta.get("name", "replay")
        return [TransferTrial(key, o.config, o.median_s, o.status) for o in self.results.values()]

    def __len__(self) -> int:
        return len(self.results)


def _sort_key(value):
    return (type(value).__name__, value) if not isinstance(value, (int, float)) else ("0", value)


@dataclass(frozen=True)
class RecordedSpace(Space):
    """A Space whose valid configs are exactly the recorded ones; iterating lists them (in the knobs' product
    order) instead of walking the whole product."""

    recorded: tuple = field(default=(), compare=False)

    @property
    def listed_size(self) -> int:
        """Configs walked to list this space (its recorded ones, not its knobs' product)."""
        return len(self.recorded)

    def __iter__(self):
        for config in self.recorded:
            yield dict(config)


def recorded_space(results: dict[str, Observation]) -> RecordedSpace:
    """Knobs whose choices are the recorded values; valid = recorded. A knob's values keep their types, as config
    keys and `Space.is_valid` do (True is not 1, 1.0 is not 1): a knob recorded with two values Python counts equal
    is refused, since its choices could not tell them apart."""
    names = list(next(iter(results.values())).config)
    values: dict[str, dict[tuple, object]] = {n: {} for n in names}  # knob -> (type, value) -> value
    for obs in results.values():
        if list(obs.config) != names and set(obs.config) != set(names):
            raise ReplayError(f"recorded configs have different knobs: {obs.config} has {sorted(obs.config)}, "
                              f"the first {sorted(names)}")
        for n in names:
            values[n].setdefault((type(obs.config[n]), obs.config[n]), obs.config[n])
    for n in names:
        _check_distinct(n, list(values[n].values()))
    knobs = tuple(Knob(n, tuple(sorted(values[n].values(), key=_sort_key))) for n in names)
    index = [{v: i for i, v in enumerate(k.choices)} for k in knobs]
    ordered = sorted((o.config for o in results.values()),
                     key=lambda c: tuple(ix[c[k.name]] for k, ix in zip(knobs, index, strict=True)))
    keys = frozenset(results)
    recorded = Constraint("only recorded configs can be replayed", lambda c: config_key(c) in keys)
    return RecordedSpace(knobs, (recorded,), recorded=tuple(ordered))


def _check_distinct(knob: str, values: list) -> None:
    """Refuse a knob whose values include two that Python counts equal but config keys tell apart (0 and False, 1
    and 1.0): as choices they would be one, so strategies would never tell the two configs apart."""
    by_value: dict[object, list] = {}
    for value in values:
        by_value.setdefault(value, []).append(value)
    clashes = [group for group in by_value.values() if len(group) > 1]
    if clashes:
        shown = "; ".join(" and ".join(f"{type(v).__name__} {v!r}" for v in group) for group in clashes)
        raise ReplayError(f"knob {knob!r} mixes values that are equal in Python but distinct configs ({shown}): "
                          "record each of a knob's values with one type")


def _value_problem(knob: str, value) -> str | None:
    """What is wrong with a recorded knob value (None when nothing): a number, a string, a boolean or null."""
    if value is not None and not isinstance(value, (bool, int, float, str)):
        return f"knob {knob!r} has the value {value!r}: a knob's values must be numbers, strings, booleans or null"
    if isinstance(value, float) and not math.isfinite(value):
        return f"knob {knob!r} has the value {value!r}: a knob's numbers must be finite"
    return None


def _median_problem(median) -> str | None:
    """What is wrong with a recorded median_s (None when nothing): null, or a positive finite number of seconds."""
    if median is None:
        return None
    if isinstance(median, bool) or not isinstance(median, (int, float)):
        return f"median_s must be null or a positive number of seconds, got {type(median).__name__} {median!r}"
    if not math.isfinite(median) or median <= 0:
        return f"median_s must be null or a positive number of seconds, got {median!r}"
    return None


def _observation(trial) -> Observation:
    """One entry of a table's trials; ReplayError saying what is wrong with it."""
    if not isinstance(trial, dict):
        raise ReplayError(f"a trial must be an object {{config, median_s, status}}, got {type(trial).__name__}")
    config, median, status = trial.get("config"), trial.get("median_s"), trial.get("status", OK)
    if not isinstance(config, dict):
        raise ReplayError(f"a trial's config must be an object of knob values, got {type(config).__name__} "
                          f"{config!r}")
    problem = next(filter(None, (_value_problem(k, v) for k, v in config.items())), None) or _median_problem(median)
    if problem:
        raise ReplayError(problem)
    if status == OK and median is None:
        raise ReplayError("an OK trial needs median_s, a positive number of seconds")
    try:
        return Observation(dict(config), median if status == OK else None, status)
    except ValueError as exc:  # the status: Observation names the known ones
        raise ReplayError(str(exc)) from None


def _entry(trial) -> str:
    text = repr(trial)
    return text if len(text) <= 120 else text[:117] + "..."


def table_from_trials(meta: dict, trials: Sequence[dict], name: str | None = None) -> ReplayTable:
    """A table from its meta and trials (`{config, median_s, status}`); ReplayError naming the entry that is wrong.
    `name`: the table's name where its meta gives none."""
    if not isinstance(meta, dict):
        raise ReplayError(f"a table's meta must be an object, got {type(meta).__name__}")
    meta = {"name": name, **meta} if name is not None else dict(meta)
    if not isinstance(trials, (list, tuple)):
        raise ReplayError(f"a table's trials must be a list of {{config, median_s, status}}, got "
                          f"{type(trials).__name__}")
    results = {}
    for i, trial in enumerate(trials):
        try:
            obs = _observation(trial)
        except ReplayError as exc:
            raise ReplayError(f"trials[{i}] {_entry(trial)}: {exc}") from None
        results[config_key(obs.config)] = obs
    return ReplayTable(meta, results)


def save_table(path: str | Path, meta: dict, trials: list[dict]) -> Path:
    """Write a table (gzip JSON, one trial per line inside the array, so diffs stay readable when unpacked)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table_from_trials(meta, trials)  # validates
    body = ",\n".join(json.dumps(t, sort_keys=True) for t in trials)
    text = f'{{"meta": {json.dumps(meta, sort_keys=True)},\n"trials": [\n{body}\n]}}\n'
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as f:
        f.write(text)
    return path


def load_table(path: str | Path) -> ReplayTable:
    """One of our tables (.json.gz or plain .json), or a Kernel Tuner cache file (recognized by its keys);
    every ReplayError names the file."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        text = f.read()
    data = _parse_json(text, path)
    if not isinstance(data, dict) or not ("tune_params_keys" in data or "trials" in data):
        raise ReplayError(f"{path}: neither a tunefarm table (meta, trials) nor a Kernel Tuner cache")
    try:
        if "tune_params_keys" in data:
            return kernel_tuner_table(data, name=path.name)
        return table_from_trials(data.get("meta", {}), data["trials"], name=path.name.split(".")[0])
    except ReplayError as exc:
        raise ReplayError(f"{path}: {exc}") from None


def load_tables(pattern: str) -> list[ReplayTable]:
    """Every table whose path matches the glob `pattern`, in path order (none for an empty pattern)."""
    return [load_table(path) for path in sorted(glob.glob(pattern))] if pattern else []


def _parse_json(text: str, path: Path):
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        closed = text.rstrip().rstrip(",") + "\n}\n}"  # a Kernel Tuner cache still open: close "cache" and the file
        try:
            return json.loads(closed)
        except json.JSONDecodeError:
            raise ReplayError(f"{path}: not JSON: {exc}") from None


def load_kernel_tuner_cache(path: str | Path) -> ReplayTable:
    table = load_table(path)
    if table.meta.get("source") != "kernel_tuner":
        raise ReplayError(f"{path}: not a Kernel Tuner cache file")
    return table


def kernel_tuner_table(data: dict, name: str = "kernel_tuner") -> ReplayTable:
    """A table from a parsed Kernel Tuner cache: knobs are tune_params (in tune_params_keys order)."""
    keys, params, cache = (data.get(part) for part in ("tune_params_keys", "tune_params", "cache"))
    if not (isinstance(keys, list) and all(isinstance(k, str) for k in keys) and isinstance(params, dict)
            and all(isinstance(v, list) for v in params.values()) and isinstance(cache, dict)):
        raise ReplayError("a Kernel Tuner cache needs tune_params_keys (a list of names), tune_params (an object of "
                          "lists of values) and cache (an object)")
    results = {}
    for key, record in cache.items():
        config = _kt_config(key, record, keys, params)
        obs = _kt_observation(config, record.get("time") if isinstance(record, dict) else None)
        results[config_key(config)] = obs
    meta = {"name": name.split(".")[0], "source": "kernel_tuner", "device": data.get("device_name"),
            "kernel": data.get("kernel_name"), "problem_size": data.get("problem_size"),
            "objective": data.get("objective", "time")}
    return ReplayTable(meta, results)


def _kt_config(key: str, record, keys: list[str], params: dict) -> dict:
    tokens = str(key).split(",")
    if len(tokens) != len(keys):
        raise ReplayError(f"cache key {key!r} has {len(tokens)} values for {len(keys)} tune_params_keys")
    config = {}
    for name, token in zip(keys, tokens, strict=True):
        if isinstance(record, dict) and name in record:
            config[name] = record[name]
            continue
        matches = [v for v in params.get(name, ()) if str(v) == token]
        if not matches:
            raise ReplayError(f"cache key {key!r}: {name}={token!r} is not among tune_params[{name!r}]")
        config[name] = matches[0]
    problem = next(filter(None, (_value_problem(k, v) for k, v in config.items())), None)
    if problem:
        raise ReplayError(f"cache key {key!r}: {problem}")
    return config


def _kt_observation(config: dict, time_ms) -> Observation:
    if isinstance(time_ms, (int, float)) and not isinstance(time_ms, bool):
        if math.isfinite(time_ms) and 0 < time_ms < KT_FAILED_TIME:
            return Observation(config, float(time_ms) * 1e-3, OK)
        return Observation(config, None, "RUNTIME_ERROR")
    return Observation(config, None, KT_ERRORS.get(str(time_ms), "RUNTIME_ERROR"))


def context_for(table: ReplayTable, seed: int = 0, options: dict | None = None,
                transfer: list[TransferTrial] | None = None, cost_model=None,
                features: str = "lowered") -> StrategyContext:
    """A StrategyContext for searching `table`'s space; `features='knobs'` hides the workload (knob features)."""
    lowered = features == "lowered" and table.workload_key is not None and "target" in table.meta
    return StrategyContext(table.space, seed=seed, options=dict(options or {}),
                           workload_key=table.workload_key if lowered else None,
                           target=table.target() if lowered else None,
                           transfer=list(transfer or []), cost_model=cost_model)


def run_strategy(table: ReplayTable, strategy: str, budget: int, seed: int = 0, batch: int = 8,
                 options: dict | None = None, until: Callable[[list[Observation]], bool] | None = None,
                 **context) -> list[Observation]:
    """Propose-measure-observe against the table until `budget` measurements, the strategy stops, or `until` (asked
    after each batch with the observations so far) says what the caller wants to know is known."""
    search = make_strategy(strategy, context_for(table, seed, options, **context))
    observed: list[Observation] = []
    while len(observed) < budget and not (until is not None and until(observed)):
        configs = search.propose(min(batch, budget - len(observed)))
        if not configs:
            break
        results = [table.measure(c) for c in configs]
        search.observe(results)
        observed.extend(results)
    return observed
