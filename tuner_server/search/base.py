"""The ask/tell interface every search strategy implements, its records, and strategy-option parsing.

A strategy sees a compiler_core `Space` and measured results, never a device or the database. The job driver asks
`propose(n)` for new configs and tells `observe(results)` what they measured; a restarted tuner rebuilds a strategy
from the job's earlier trials (`StrategyContext.history`).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, runtime_checkable

from compiler_core.space import Space, config_key

OK = "OK"
STATUSES = ("OK", "COMPILE_ERROR", "RUNTIME_ERROR", "TIMEOUT", "WRONG_ANSWER", "RESOURCE_EXCEEDED", "AGENT_LOST")


@dataclass(frozen=True)
class Observation:
    """One measured config: `median_s` is the median runtime in seconds, None when nothing was measured."""

    config: dict
    median_s: float | None
    status: str = OK

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"unknown trial status {self.status!r}; known: {', '.join(STATUSES)}")


@dataclass(frozen=True)
class TransferTrial:
    """A trial of another workload on the same device class: what a model-guided strategy learns from first."""

    workload_key: str
    config: dict
    median_s: float | None
    status: str = OK


@dataclass(frozen=True)
class StrategyContext:
    """What a strategy is built from. `history`: the job's earlier trials (rebuild after a tuner restart).

    Only model-guided strategies read the rest: `workload_key` and `target` (a compiler_core Target) give configs
    their lowered-IR features (without them, knob values are the features); `transfer` holds trials of other
    workloads of the job's device class, and `cost_model` a model already trained on them (a
    `tuner_server.cost_model.CostModel`, e.g. loaded from the database), which is used instead of fitting one;
    `feature_pool` (a `tuner_server.cost_model.FeaturePool`) lowers configs for their features in the background, so
    `propose` never waits on compiler_core (without one, features are computed inline: repeatable runs).
    """

    space: Space
    seed: int = 0
    options: dict[str, Any] = field(default_factory=dict)
    history: list[Observation] = field(default_factory=list)
    workload_key: str | None = None
    target: Any = None
    transfer: list[TransferTrial] = field(default_factory=list)
    cost_model: Any = None
    feature_pool: Any = None


@runtime_checkable
class SearchStrategy(Protocol):
    def propose(self, n: int) -> list[dict]:
        """Up to n new valid configs, never one already proposed or observed; fewer or [] once exhausted."""
        ...

    def observe(self, results: list[Observation]) -> None:
        """Take measured results (of proposed configs or any others, which then count as seen). A config outside
        the space (not `space.is_valid`: a knob missing or unknown, a value not among its choices, a constraint
        broken) is only seen: it is never proposed, and nothing is learnt from it (no model's training point, no
        parent, no best runtime)."""
        ...


def best(observations: Iterable[Observation]) -> Observation | None:
    """The fastest OK observation with a runtime (the first of equals), or None."""
    candidates = [o for o in observations if o.status == OK and o.median_s is not None]
    return min(candidates, key=lambda o: o.median_s) if candidates else None


class SeenConfigs:
    """Keys of every config proposed or observed: how strategies keep `propose` free of repeats."""

    def __init__(self, configs: Iterable[dict] = ()):
        self._keys = {config_key(c) for c in configs}

    def add(self, config: dict) -> bool:
        """Record `config`; True when it was new."""
        key = config_key(config)
        if key in self._keys:
            return False
        self._keys.add(key)
        return True

    def __contains__(self, config: dict) -> bool:
        return config_key(config) in self._keys

    def __len__(self) -> int:
        return len(self._keys)


def check_batch_size(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"propose(n) needs a non-negative int, got {n!r}")
    return n


# ---- options ---------------------------------------------------------------------------------------------------
class Option(NamedTuple):
    """One entry of a strategy's OPTIONS table. A default of None makes the option optional (None allowed).
    `maximum` bounds shares at 1 and a round's work where a larger value would hold the tuner's driver, which
    proposes for every job, for minutes or fill its memory: a job asking for more is refused when submitted."""

    type: type
    default: Any
    doc: str
    choices: tuple | None = None
    minimum: int | float | None = None
    maximum: int | float | None = None


def _type_error(name: str, opt: Option, value: Any) -> str | None:
    if value is None:
        return None if opt.default is None else f"option {name!r} must not be None"
    wanted = (int, float) if opt.type is float else opt.type
    if (isinstance(value, bool) and opt.type is not bool) or not isinstance(value, wanted):
        return f"option {name!r} must be {opt.type.__name__}, got {type(value).__name__} {value!r}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"option {name!r} must be a finite number, got {value!r}"
    if opt.choices is not None and value not in opt.choices:
        return f"option {name!r}={value!r} not allowed; allowed values: {', '.join(map(repr, opt.choices))}"
    if opt.minimum is not None and value < opt.minimum:
        return f"option {name!r}={value!r} must be at least {opt.minimum!r}"
    if opt.maximum is not None and value > opt.maximum:
        return f"option {name!r}={value!r} must be at most {opt.maximum!r}"
    return None


def parse_options(table: Mapping[str, tuple], given: Mapping[str, Any] | None) -> dict[str, Any]:
    """Defaults overlaid with `given`; ValueError naming every unknown option, wrong type or disallowed value."""
    given = {} if given is None else given
    if not isinstance(given, Mapping):
        raise ValueError(f"strategy options must be a mapping, got {type(given).__name__}")
    options = {name: Option(*entry) for name, entry in table.items()}
    problems = []
    unknown = sorted(set(given) - set(options))
    if unknown:
        known = ", ".join(sorted(options)) or "(none)"
        problems.append(f"unknown option(s) {', '.join(map(repr, unknown))}; known: {known}")
    for name, opt in options.items():
        if name in given and (problem := _type_error(name, opt, given[name])):
            problems.append(problem)
    if problems:
        raise ValueError("; ".join(problems))
    parsed = {name: given.get(name, opt.default) for name, opt in options.items()}
    return {name: float(v) if options[name].type is float and v is not None else v for name, v in parsed.items()}


def describe_options(table: Mapping[str, tuple]) -> dict[str, dict]:
    """JSON-friendly form of an OPTIONS table, for the REST API's documentation."""
    out = {}
    for name, entry in table.items():
        opt = Option(*entry)
        out[name] = {"type": opt.type.__name__, "default": opt.default, "doc": opt.doc,
                     "optional": opt.default is None}
        if opt.choices is not None:
            out[name]["choices"] = list(opt.choices)
        if opt.minimum is not None:
            out[name]["minimum"] = opt.minimum
        if opt.maximum is not None:
            out[name]["maximum"] = opt.maximum
    return out
