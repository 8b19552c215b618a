"""Whether an imported trial is a measurement that could have happened, so that no line of an import becomes a head
that real trials can never beat (a negative or NaN median) or a record other readers choke on.

This farm's agents report through gRPC, whose fields rpc/convert.py checks; an import comes from anywhere (another
farm, a hand-edited file), so every trial line must be:
- samples: at most MAX_SAMPLES positive finite numbers (seconds);
- OK: at least one sample, a median within the samples' range, and each CI bound given on its side of the median;
- any other status: no samples, median or CI (a build or run that failed was not timed);
- compile_s and max_abs_error: absent, or finite and >= 0;
- codegen_version: present (the code generator the config was built with), at most MAX_CODEGEN_VERSION characters;
- config: at most MAX_KNOBS knobs, each an int, string or boolean; and, where the device class's compiler target is
  known (registered here, or in the import's device line), a member of the op's space for that workload and target
  (`space_problem`, checked by repo/exchange.py once the targets are known), or of an older family of it that the
  op's template still builds (a config stored before a knob existed);
- created_at: between bounds.EARLIEST and `now` plus MAX_CLOCK_SKEW (another farm's clock may run a little ahead).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import compiler_core as cc
from compiler_core.schedules import template_for
from tuner_server import bounds

MAX_SAMPLES = 100_000
MAX_CODEGEN_VERSION = 64
MAX_KNOBS = 64
MAX_KNOB_TEXT = 256
MAX_ERROR_CHARS = 16_000
MAX_CLOCK_SKEW = timedelta(days=1)


def _is_finite(value: int | float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond a double's range
        return False


def number_problem(name: str, value: Any, *, positive: bool) -> str | None:
    """Why `value` (absent is fine) is not a finite number >= 0 (> 0 when `positive`); None when it is."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not _is_finite(value):
        return f"{name} must be a finite number, got {value!r}"[:200]
    if value < 0 or (positive and value == 0):
        return f"{name} must be {'> 0' if positive else '>= 0'}, got {value!r}"
    return None


def timings_problem(t: Mapping[str, Any]) -> str | None:
    """Why a trial's timings (samples, median and CI, by its status) could not have been measured; None when they
    could. Imports and agents' reports (rpc/convert.py) are both held to it."""
    samples, median, low, high = t.get("samples") or [], t.get("median_s"), t.get("ci_low_s"), t.get("ci_high_s")
    if len(samples) > MAX_SAMPLES:
        return f"at most {MAX_SAMPLES} samples, got {len(samples)}"
    for i, sample in enumerate(samples):
        if problem := number_problem(f"samples[{i}]", sample, positive=True):
            return problem
    for name in ("median_s", "ci_low_s", "ci_high_s"):
        if problem := number_problem(name, t.get(name), positive=True):
            return problem
    if t["status"] != "OK":
        if samples or median is not None or low is not None or high is not None:
            return f"a {t['status']} trial was not timed: it has no samples, median_s or CI"
        return None
    if not samples or median is None:
        return "an OK trial has its samples and median_s"
    if not min(samples) <= median <= max(samples):
        return f"median_s {median!r} lies outside its samples' range [{min(samples)!r}, {max(samples)!r}]"
    if low is not None and low > median or high is not None and high < median:
        return f"the CI [{low!r}, {high!r}] does not hold median_s {median!r}"
    return None


def _config_problem(config: Mapping[str, Any]) -> str | None:
    if len(config) > MAX_KNOBS:
        return f"config has {len(config)} knobs; at most {MAX_KNOBS}"
    for knob, value in config.items():
        ok_int = isinstance(value, int) and abs(value) <= bounds.MAX_INT32
        ok_text = isinstance(value, str) and len(value) <= MAX_KNOB_TEXT
        if len(knob) > MAX_KNOB_TEXT or not (ok_int or ok_text):  # bools are ints
            return (f"config knob {knob[:64]!r} must be an int within +-{bounds.MAX_INT32}, a string of at most "
                    f"{MAX_KNOB_TEXT} characters or a boolean, got {value!r}"[:300])
    return None


def space_problem(workload: cc.Workload, config: Mapping[str, Any], target: cc.Target) -> str | None:
    """Why `config` is not a config of `workload` on `target`, as lower() decides it: against the space the op's
    template says the config belongs to (`config_space`: the searched one, or an older family it still builds, such
    as one before a knob was added); None when it is one."""
    try:
        template = template_for(workload.op, target.kind)
        space = template.config_space(workload, target, dict(config)) if hasattr(template, "config_space") else \
            template.space(workload, target)
        problems = space.violations(dict(config))
    except (cc.WorkloadError, cc.ConfigError, ValueError) as exc:
        problems = [str(exc)]
    if not problems:
        return None
    return f"config is not in the space of {workload.key} on {target.kind} {target.arch}: {'; '.join(problems)}"[:600]


def time_problem(name: str, value: datetime, now: datetime) -> str | None:
    """Why a timestamp of an import line is out of range (see the module's doc); None when it is not."""
    problem = bounds.time_problem(value)
    if problem is None and value > now + MAX_CLOCK_SKEW:
        problem = f"is in the future (after {(now + MAX_CLOCK_SKEW).isoformat()})"
    return None if problem is None else f"{name} {value.isoformat()} {problem}"


def trial_problem(t: Mapping[str, Any], now: datetime) -> str | None:
    """What makes a parsed trial line implausible (the first thing found), or None. `t["created_at"]` is parsed."""
    if not t["codegen_version"].strip() or len(t["codegen_version"]) > MAX_CODEGEN_VERSION:
        return f"codegen_version must be 1..{MAX_CODEGEN_VERSION} characters, got {t['codegen_version']!r}"
    for name in ("compile_s", "max_abs_error"):
        if problem := number_problem(name, t.get(name), positive=False):
            return problem
    if t.get("error") is not None and len(t["error"]) > MAX_ERROR_CHARS:
        return f"error text over {MAX_ERROR_CHARS} characters"
    return (timings_problem(t) or _config_problem(t["config"])
            or time_problem("created_at", t["created_at"], now))
