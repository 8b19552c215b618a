"""The JSON-lines exchange format: one self-describing object per line, each with a "type".

    {"type": "header", "format": "tunefarm-export", "format_version": 1, "exported_at": ...}
    {"type": "workload", "key": ..., "op": ..., "params": {...}, "flops": ..., "bytes": ...}
    {"type": "device", "device_class": ..., "kind": ..., "fingerprint": {...}}
    {"type": "trial", "id": ..., "workload": key, "device_class": ..., "config": {...}, "codegen_version": ...,
     "status": ..., "samples": [...], "median_s": ..., "ci_low_s": ..., "ci_high_s": ..., "error": ...,
     "compile_s": ..., "max_abs_error": ..., "created_at": ISO-8601 with zone}
    {"type": "schedule_version", "workload": key, "device_class": ..., "version": n, "parent_version": ...,
     "trial": trial id (of a trial line), "reason": ..., "pinned": ..., "author": ..., "message": ...,
     "created_at": ...}

`parse_lines` checks everything an import needs before anything is written: strict JSON (no NaN or Infinity),
only the fields above (an unknown one is refused, as a JSON body's is), the fields' types, numbers within what the
columns hold, trial ids that are UUIDs (what exports write), and each trial's plausibility (repo/plausible.py).
Whether a trial's device class is one this farm knows, or one a device line before it introduces, repo/exchange.py
checks (it needs the database).
"""
from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import compiler_core as cc
from tuner_server import bounds, strict_json
from tuner_server.db.models import TRIAL_STATUSES, VERSION_REASONS
from tuner_server.device_class import CLASS_PATTERN
from tuner_server.repo.errors import ImportFormatError
from tuner_server.repo.plausible import time_problem, trial_problem
from tuner_server.repo.workloads import canonical_workload
from tuner_server.targets import target_problem

FORMAT = "tunefarm-export"
FORMAT_VERSION = 1
MAX_PROBLEMS = 50
MAX_ID = 64  # characters of a trial's id an error repeats (an id is a UUID: 36)
MAX_AUTHOR = 128
MAX_MESSAGE = 2000
_CLASS_RE = re.compile(CLASS_PATTERN)
_NUM = (int, float)
_OPT_NUM = (int, float, type(None))
_OPT_STR = (str, type(None))
_OPT_INT = (int, type(None))

SCHEMAS: dict[str, dict[str, tuple[tuple[type, ...], bool]]] = {
    "header": {"format": ((str,), True), "format_version": ((int,), True), "exported_at": (_OPT_STR, False)},
    "workload": {"key": ((str,), True), "op": (_OPT_STR, False), "params": ((dict, type(None)), False),
                 "flops": (_OPT_NUM, False), "bytes": (_OPT_NUM, False)},
    "device": {"device_class": ((str,), True), "kind": (_OPT_STR, False), "fingerprint": ((dict,), False)},
    "trial": {"id": ((str,), True), "workload": ((str,), True), "device_class": ((str,), True),
              "config": ((dict,), True), "codegen_version": ((str,), True), "status": ((str,), True),
              "samples": ((list,), False), "median_s": (_OPT_NUM, False), "ci_low_s": (_OPT_NUM, False),
              "ci_high_s": (_OPT_NUM, False), "error": (_OPT_STR, False), "compile_s": (_OPT_NUM, False),
              "max_abs_error": (_OPT_NUM, False), "created_at": ((str,), True)},
    "schedule_version": {"workload": ((str,), True), "device_class": ((str,), True), "version": ((int,), True),
                         "parent_version": (_OPT_INT, False), "trial": ((str,), True), "reason": ((str,), True),
                         "pinned": ((bool,), False), "author": (_OPT_STR, False), "message": (_OPT_STR, False),
                         "created_at": ((str,), True)},
}


@dataclass
class Parsed:
    """The validated content of an import, workload keys canonicalised, timestamps parsed."""

    workloads: set[str] = field(default_factory=set)
    devices: dict[str, dict[str, Any]] = field(default_factory=dict)  # class -> fingerprint
    device_lines: dict[str, int] = field(default_factory=dict)  # class -> the line of its first device line
    trials: list[dict[str, Any]] = field(default_factory=list)  # each with its "line" number
    versions: list[dict[str, Any]] = field(default_factory=list)


def parse_lines(lines: Iterable[str], now: datetime) -> Parsed:
    """Validate every line (`now`: the import's time, the latest a record may claim to be from, give or take
    plausible.MAX_CLOCK_SKEW); ImportFormatError listing 'line N: problem' if any is wrong."""
    parsed, problems, keys = Parsed(), [], {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            _parse_one(strict_json.loads(line), parsed, keys, now, number)
        except json.JSONDecodeError as exc:  # strict_json's own refusals (MalformedJSON) say what is wrong already
            problems.append(f"line {number}: not JSON ({exc.msg} at column {exc.colno}); each line is one JSON object "
                            "of an export")
        except (ValueError, TypeError, KeyError, OverflowError, cc.WorkloadError) as exc:
            problems.append(f"line {number}: {exc}")
        if len(problems) >= MAX_PROBLEMS:
            break
    trial_ids = {t["id"] for t in parsed.trials}
    problems += [f"schedule_version {v['workload']} v{v['version']}: trial {v['trial']!r} is not in the import"
                 for v in parsed.versions if v["trial"] not in trial_ids]
    if problems:
        raise ImportFormatError(problems)
    return parsed


def _parse_one(obj: Any, parsed: Parsed, keys: dict[str, str], now: datetime, number: int) -> None:
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    kind = obj.get("type")
    if kind not in SCHEMAS:
        raise ValueError(f"unknown type {kind!r}; one of {', '.join(SCHEMAS)}")
    unknown = [name for name in obj if name != "type" and name not in SCHEMAS[kind]]
    if unknown:
        raise ValueError(f"{kind}: field {str(unknown[0])[:MAX_ID]!r} is not one of type, {', '.join(SCHEMAS[kind])}")
    for name, (types, required) in SCHEMAS[kind].items():
        if name not in obj:
            if required:
                raise ValueError(f"{kind}: missing field {name!r}")
            continue
        value = obj[name]
        if isinstance(value, bool) and bool not in types or not isinstance(value, types):
            raise ValueError(f"{kind}: field {name!r} has the wrong type ({type(value).__name__})")
    if kind == "header":
        if obj["format"] != FORMAT or obj["format_version"] != FORMAT_VERSION:
            raise ValueError(f"not a {FORMAT} v{FORMAT_VERSION} stream: {obj['format']} v{obj['format_version']}")
    elif kind == "workload":
        parsed.workloads.add(_canonical(obj["key"], keys))
    elif kind == "device":
        name = _device_class(obj["device_class"])
        parsed.devices[name] = _fingerprint(obj.get("fingerprint") or {})
        parsed.device_lines.setdefault(name, number)
    elif kind == "trial":
        parsed.trials.append({**_trial(obj, keys, now), "line": number})
    else:
        parsed.versions.append(_version(obj, keys, now))


def _trial(obj: dict, keys: dict[str, str], now: datetime) -> dict[str, Any]:
    if obj["status"] not in TRIAL_STATUSES:
        raise ValueError(f"trial: unknown status {obj['status']!r}; one of {', '.join(TRIAL_STATUSES)}")
    if not _is_uuid(obj["id"]):
        raise ValueError(f"trial: id {obj['id'][:MAX_ID]!r} is not a UUID (as exports write them, e.g. "
                         "'0f8fad5b-d9cb-469f-a165-70867728950e')")
    samples = obj.get("samples") or []
    if not all(isinstance(s, _NUM) and not isinstance(s, bool) for s in samples):
        raise ValueError("trial: samples must be numbers")
    record = {k: obj.get(k) for k in SCHEMAS["trial"]}
    record.update(workload=_canonical(obj["workload"], keys), device_class=_device_class(obj["device_class"]),
                  created_at=_timestamp("trial", obj["created_at"]), samples=samples)
    problem = trial_problem(record, now)
    if problem is not None:
        raise ValueError(f"trial {obj['id'][:MAX_ID]!r} is implausible: {problem}")
    return record


def _version(obj: dict, keys: dict[str, str], now: datetime) -> dict[str, Any]:
    if obj["reason"] not in VERSION_REASONS:
        raise ValueError(f"schedule_version: unknown reason {obj['reason']!r}; one of {', '.join(VERSION_REASONS)}")
    if not 1 <= obj["version"] <= bounds.MAX_VERSION:
        raise ValueError(f"schedule_version: version must be between 1 and {bounds.MAX_VERSION}, got "
                         f"{obj['version']}")
    parent = obj.get("parent_version")
    if parent is not None and not 1 <= parent < obj["version"]:
        raise ValueError(f"schedule_version: parent_version must be between 1 and version - 1, got {parent}")
    for name, limit in (("author", MAX_AUTHOR), ("message", MAX_MESSAGE)):
        if obj.get(name) is not None and len(obj[name]) > limit:
            raise ValueError(f"schedule_version: {name} over {limit} characters")
    record = {k: obj.get(k) for k in SCHEMAS["schedule_version"]}
    record.update(workload=_canonical(obj["workload"], keys), device_class=_device_class(obj["device_class"]),
                  created_at=_timestamp("schedule_version", obj["created_at"]))
    if problem := time_problem("created_at", record["created_at"], now):
        raise ValueError(f"schedule_version: {problem}")
    return record


def _is_uuid(text: str) -> bool:
    """Whether `text` is a UUID in its canonical form (lowercase hex, hyphenated), as trial ids are written."""
    try:
        return str(uuid.UUID(text)) == text
    except ValueError:
        return False


def _canonical(key: str, cache: dict[str, str]) -> str:
    if key not in cache:
        cache[key] = canonical_workload(key).key
    return cache[key]


def _fingerprint(fingerprint: dict) -> dict:
    """A device's fingerprint; its compiler target, when it has one, must be a Target compiler_core can build for,
    by the rules `Register` holds an agent's to (the server builds the class's spaces from it)."""
    if "target" in fingerprint:
        problem = target_problem(cc.Target.from_dict(fingerprint["target"]))  # ValueError names a bad field
        if problem is not None:
            raise ValueError(f"device target.{problem[0]}: {problem[1]}")
    return dict(fingerprint)


def _device_class(name: str) -> str:
    if not _CLASS_RE.fullmatch(name):
        raise ValueError(f"bad device class {name!r}")
    return name


def _timestamp(kind: str, text: str) -> datetime:
    """A line's created_at: ISO 8601 with a zone, within bounds.EARLIEST .. bounds.LATEST (so it converts to UTC
    and stores); bounds.parse_time says what is wrong otherwise."""
    try:
        return bounds.parse_time(text[:64])
    except ValueError as exc:
        raise ValueError(f"{kind}: created_at {text[:64]!r} {exc}") from None
