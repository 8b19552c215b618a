"""Measurement options: the one place their defaults live, resolved completely when a job is created.

A job stores the resolved options (its status shows them) and every task sends them to the agent, which has
no defaults of its own. AGENT_FIELDS travel in the proto MeasureOptions; the rest steer the tuner's side of
the protocol (how many top trials are re-measured head to head when the job ends, whether the reference
library is timed with them).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from tuner_server.device_class import device_kind
from tuner_server.repo.errors import InvalidRequest

# name -> (type, low, high, what it means); bounds are inclusive
FIELDS: dict[str, tuple[type, float, float, str]] = {
    "warmup": (int, 0, 1000, "untimed runs before sampling"),
    "min_repeats": (int, 1, 10_000, "at least this many samples (rounds when comparing)"),
    "max_repeats": (int, 1, 100_000, "never more samples than this"),
    "min_time_s": (float, 0.0, 60.0, "and at least this much timed time"),
    "max_time_s": (float, 0.0, 600.0, "adaptive sampling stops here even if the CI is still wide (then: noisy)"),
    "target_rel_ci": (float, 1e-4, 1.0, "stop once the 95% CI of the median (of the paired ratio) is this narrow"),
    "max_contention": (float, 1e-3, 1.0, "above this share of the cores taken by other processes: noisy"),
    "timeout_s": (float, 0.1, 3600.0, "one task's build + verify + measure budget"),
    "flush_cache": (bool, 0, 1, "flush the last-level cache / L2 before every sample"),
    "recheck_top": (int, 0, 64, "when the job ends, its fastest trials re-measured head to head against the head"),
    "min_gain": (float, 0.0, 0.5, "the head moves only to a candidate at least this much faster (95% CI of the "
                                  "paired ratio below 1 - min_gain): equals do not take turns on noise"),
    "time_reference": (bool, 0, 1, "time the reference library (numpy, PyTorch) beside the head"),
}
AGENT_FIELDS = ("warmup", "min_repeats", "max_repeats", "min_time_s", "max_time_s", "target_rel_ci",
                "max_contention", "timeout_s", "flush_cache")

DEFAULTS: dict[str, dict[str, Any]] = {
    # CPU: a cold cache per sample; samples until the median is known to 3 % (2 s at most per task)
    "cpu": {"warmup": 1, "min_repeats": 7, "max_repeats": 400, "min_time_s": 0.05, "max_time_s": 2.0,
            "target_rel_ci": 0.03, "max_contention": 0.10, "timeout_s": 60.0, "flush_cache": True,
            "recheck_top": 5, "min_gain": 0.01, "time_reference": True},
    # CUDA: events are precise and the device is not shared through the OS; a tighter interval costs little
    "cuda": {"warmup": 3, "min_repeats": 10, "max_repeats": 1000, "min_time_s": 0.02, "max_time_s": 1.0,
             "target_rel_ci": 0.02, "max_contention": 1.0, "timeout_s": 60.0, "flush_cache": True,
             "recheck_top": 5, "min_gain": 0.01, "time_reference": True},
}


def _value(name: str, value: Any) -> Any:
    kind, low, high, _ = FIELDS[name]
    if kind is bool:
        if not isinstance(value, bool):
            raise InvalidRequest(f"measure.{name} must be true or false, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not isinstance(value, int)):
        raise InvalidRequest(f"measure.{name} must be {'an integer' if kind is int else 'a number'}, got {value!r}")
    if not (math.isfinite(value) and low <= value <= high):
        raise InvalidRequest(f"measure.{name} must be between {low:g} and {high:g}, got {value!r}")
    return kind(value)


def _budget_problem(options: Mapping[str, Any], given: Mapping[str, Any], kind: str) -> str | None:
    """Why sampling for up to max_time_s cannot fit in timeout_s, the whole task's budget (build + verify +
    measure: the agent gives up on the task at timeout_s, so a max_time_s at or past it makes every slow candidate a
    TIMEOUT instead of a noisy measurement); None when it fits. min_time_s <= max_time_s is checked apart."""
    if options["max_time_s"] < options["timeout_s"]:
        return None

    def named(name: str) -> str:
        return f"measure.{name} ({options[name]}{'' if name in given else f', the {kind} default'})"
    return (f"{named('max_time_s')} must be below {named('timeout_s')}: timeout_s bounds the whole task (build, "
            "verify and measure), so sampling for max_time_s cannot fit in it; raise timeout_s or lower max_time_s")


def resolve(given: Mapping[str, Any] | None, kind: str, *, check_budget: bool = True) -> dict[str, Any]:
    """Every option, from `given` where set (None counts as unset) and the device kind's defaults otherwise;
    InvalidRequest names an unknown option, a wrong type, a value out of range or an inconsistent pair (with
    `check_budget`, a max_time_s that does not fit in timeout_s too: a new job's options)."""
    if kind not in DEFAULTS:
        raise InvalidRequest(f"no measurement defaults for device kind {kind!r}; one of {', '.join(DEFAULTS)}")
    given = {k: v for k, v in (given or {}).items() if v is not None}
    unknown = sorted(set(given) - set(FIELDS))
    if unknown:
        raise InvalidRequest(f"unknown measure option(s) {', '.join(unknown)}; known: {', '.join(FIELDS)}")
    options = {name: _value(name, given[name]) if name in given else DEFAULTS[kind][name] for name in FIELDS}
    if options["min_repeats"] > options["max_repeats"]:
        raise InvalidRequest(f"measure.min_repeats ({options['min_repeats']}) exceeds measure.max_repeats "
                             f"({options['max_repeats']})")
    if options["min_time_s"] > options["max_time_s"]:
        raise InvalidRequest(f"measure.min_time_s ({options['min_time_s']}) exceeds measure.max_time_s "
                             f"({options['max_time_s']})")
    if check_budget and (problem := _budget_problem(options, given, kind)):
        raise InvalidRequest(problem)
    return options


def of_job(stored: Mapping[str, Any], device_class: str) -> dict[str, Any]:
    """A job's options as stored, completed from the defaults of its device's kind (jobs created before an option
    existed store none for it). A job created before max_time_s had to fit in timeout_s keeps running as it was."""
    return resolve(stored, device_kind(device_class), check_budget=False)


def describe() -> list[dict[str, Any]]:
    """The options with their meaning, bounds and per-kind defaults (for /v1/ops and the docs)."""
    return [{"name": n, "type": t.__name__, "min": lo, "max": hi, "doc": doc,
             "defaults": {k: d[n] for k, d in DEFAULTS.items()}} for n, (t, lo, hi, doc) in FIELDS.items()]


FINAL_TIME_FACTOR = 3  # a final comparison decides what the job reports and where the head ends: it may look longer


def for_final_comparison(options: dict[str, Any]) -> dict[str, Any]:
    """The options a final comparison is timed with: the job's, with FINAL_TIME_FACTOR times the sampling caps."""
    return {**options, "max_time_s": options["max_time_s"] * FINAL_TIME_FACTOR,
            "max_repeats": options["max_repeats"] * FINAL_TIME_FACTOR,
            "timeout_s": max(options["timeout_s"], options["max_time_s"] * FINAL_TIME_FACTOR * 2)}
