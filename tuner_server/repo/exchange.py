"""Exchange results between farms as JSON lines (format in exchange_format.py).

Import checks each line (exchange_format.parse_lines), then each trial's device class: one this farm knows, or one a
`device` line before the trial introduces with a fingerprint that describes it (derives that class, as an agent's
Register does): a class made from a trial alone would have no fingerprint, and every export would spread it. Then
each trial's config against the op's space on the device class's compiler target where one is known
(plausible.space_problem): a config no template builds would become a head whose source cannot be generated and that
no measured trial replaces. Then it merges: trials are deduplicated by content identity (workload key, device class,
config key, codegen version, timestamp, median: no farm-local ids), and a key's exported head becomes a local version
with reason 'import' when it beats the local head under the promotion rule. It is one transaction: a malformed line
means nothing is written.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

import compiler_core as cc
from tuner_server.db.models import Device, ScheduleVersion, Trial, Workload
from tuner_server.db.types import utcnow
from tuner_server.device_class import device_class as derive_device_class
from tuner_server.repo.agents import ensure_device
from tuner_server.repo.errors import ImportFormatError
from tuner_server.repo.exchange_format import FORMAT, FORMAT_VERSION, MAX_PROBLEMS, Parsed, parse_lines
from tuner_server.repo.plausible import space_problem
from tuner_server.repo.records import ImportCounts
from tuner_server.repo.schedules import maybe_promote
from tuner_server.repo.trials import append_trial, content_identity
from tuner_server.repo.workloads import canonical_workload, get_or_create_workload
from tuner_server.targets import target_for_class

_TRIAL_FIELDS = ("samples", "median_s", "ci_low_s", "ci_high_s", "error", "compile_s", "max_abs_error")


def export_jsonl(*, session: Session, workload_key: str | None = None, device_class: str | None = None,
                 op: str | None = None, now: datetime | None = None) -> Iterator[str]:
    """Workloads, devices, trials and schedule versions matching the filters, one JSON object per line."""
    where_w = []
    if workload_key is not None:
        where_w.append(Workload.key == canonical_workload(workload_key).key)
    if op is not None:
        where_w.append(Workload.op == op)
    yield _dump({"type": "header", "format": FORMAT, "format_version": FORMAT_VERSION,
                 "exported_at": (now or utcnow()).isoformat()})
    workloads = {w.id: w for w in session.scalars(select(Workload).where(*where_w).order_by(Workload.key))}
    for w in workloads.values():
        yield _dump({"type": "workload", "key": w.key, "op": w.op, "params": w.params, "flops": w.flops,
                     "bytes": w.bytes})
    devices = select(Device).order_by(Device.device_class)
    for d in session.scalars(devices.where(Device.device_class == device_class) if device_class else devices):
        yield _dump({"type": "device", "device_class": d.device_class, "kind": d.kind, "fingerprint": d.fingerprint})
    ids = list(workloads)
    by_class = [] if device_class is None else [Trial.device_class == device_class]
    trials = select(Trial).where(Trial.workload_id.in_(ids), *by_class).order_by(Trial.created_at, Trial.id)
    for t in session.scalars(trials.execution_options(yield_per=500)):
        yield _dump(_trial_record(t, workloads[t.workload_id].key))
    by_class = [] if device_class is None else [ScheduleVersion.device_class == device_class]
    versions = (select(ScheduleVersion).where(ScheduleVersion.workload_id.in_(ids), *by_class)
                .order_by(ScheduleVersion.workload_id, ScheduleVersion.device_class, ScheduleVersion.version))
    for v in session.scalars(versions):
        yield _dump({"type": "schedule_version", "workload": workloads[v.workload_id].key,
                     "device_class": v.device_class, "version": v.version, "parent_version": v.parent_version,
                     "trial": v.trial_id, "reason": v.reason, "pinned": v.pinned, "author": v.author,
                     "message": v.message, "created_at": v.created_at.isoformat()})


def import_jsonl(lines: Iterable[str], *, session: Session, author: str,
                 now: datetime | None = None) -> ImportCounts:
    """Merge an export into this database; ImportFormatError (and nothing written) if any line is bad."""
    now = now or utcnow()
    parsed = parse_lines(lines, now)
    problems = _class_problems(parsed, session) or _config_problems(parsed, session)
    if problems:
        raise ImportFormatError(problems)
    with session.begin_nested():
        workloads, created_w = _import_workloads(parsed, session)
        created_d = _import_devices(parsed, session, now)
        local_ids, appended, duplicates = _import_trials(parsed, workloads, session)
        versions = _import_heads(parsed, local_ids, session, author, now)
    return ImportCounts(created_w, created_d, appended, duplicates, versions)


def _target(device_class: str, parsed: Parsed, session: Session) -> cc.Target | None:
    """The class's compiler target: the one stored here (which an import never replaces), else the import's device
    line's; None when neither has one (then only the config's form is checked, plausible.py)."""
    try:
        return target_for_class(device_class, session=session)
    except LookupError:
        stored = parsed.devices.get(device_class, {}).get("target")
        return cc.Target.from_dict(dict(stored)) if stored is not None else None  # parse_lines checked it


def _class_problems(parsed: Parsed, session: Session) -> list[str]:
    """'line N: ...' for every device line that introduces a class this farm does not know without a fingerprint
    that derives it, and every trial of a class this farm does not know that no device line before it introduced."""
    named = set(parsed.devices) | {t["device_class"] for t in parsed.trials}
    known = set(session.scalars(select(Device.device_class).where(Device.device_class.in_(named)))) if named else set()
    problems = []
    for dclass, line in sorted(parsed.device_lines.items(), key=lambda item: item[1]):
        if dclass not in known and (problem := _fingerprint_problem(dclass, parsed.devices[dclass])):
            problems.append(f"line {line}: device {dclass} is new to this farm, and its fingerprint {problem}")
    for t in parsed.trials:
        dclass = t["device_class"]
        if dclass not in known and parsed.device_lines.get(dclass, t["line"]) >= t["line"]:
            problems.append(f"line {t['line']}: trial {t['id']!r} is of device class {dclass}, which this farm does "
                            f"not know: a `device` line for {dclass} (with its fingerprint, as exports write it) must "
                            "precede trials of a class the farm does not know")
    return problems[:MAX_PROBLEMS]


def _fingerprint_problem(dclass: str, fingerprint: dict) -> str | None:
    """Why a device line's fingerprint does not describe `dclass` (None when it derives exactly that class)."""
    try:
        derived = derive_device_class(fingerprint)
    except (ValueError, TypeError) as exc:
        return f"does not describe it ({exc})"
    return None if derived == dclass else f"describes {derived}, not {dclass}"


def _config_problems(parsed: Parsed, session: Session) -> list[str]:
    """'line N: ...' for every trial whose config is not in its op's space on its class's target."""
    targets: dict[str, cc.Target | None] = {}
    workloads: dict[str, cc.Workload] = {}
    problems: list[str] = []
    for t in parsed.trials:
        dclass = t["device_class"]
        if dclass not in targets:
            targets[dclass] = _target(dclass, parsed, session)
        if targets[dclass] is None:
            continue
        workload = workloads.setdefault(t["workload"], cc.parse_key(t["workload"]))
        problem = space_problem(workload, t["config"], targets[dclass])
        if problem is not None:
            problems.append(f"line {t['line']}: trial {t['id']!r} on {dclass}: {problem}")
            if len(problems) >= MAX_PROBLEMS:
                break
    return problems


def _import_workloads(parsed: Parsed, session: Session) -> tuple[dict[str, Workload], int]:
    keys = parsed.workloads | {t["workload"] for t in parsed.trials} | {v["workload"] for v in parsed.versions}
    existing = set(session.scalars(select(Workload.key).where(Workload.key.in_(keys))).all()) if keys else set()
    rows = {key: get_or_create_workload(key, session=session) for key in sorted(keys)}
    return rows, len(keys - existing)


def _import_devices(parsed: Parsed, session: Session, now: datetime) -> int:
    classes = set(parsed.devices) | {t["device_class"] for t in parsed.trials}
    created = 0
    for name in sorted(classes):
        created += session.get(Device, name) is None
        ensure_device(name, parsed.devices.get(name, {}), session=session, now=now)  # fills a missing target
    return created


def _import_trials(parsed: Parsed, workloads: dict[str, Workload],
                   session: Session) -> tuple[dict[str, str], int, int]:
    """Map each imported trial id to a local trial id, appending the ones this farm does not have."""
    local_ids: dict[str, str] = {}
    appended = duplicates = 0
    for t in parsed.trials:
        identity = content_identity(t["workload"], t["device_class"], cc.config_key(t["config"]),
                                    t["codegen_version"], t["created_at"], t["median_s"])
        same = session.scalars(select(Trial.id).where(Trial.content_id == identity).limit(1)).first()
        if same is not None:
            local_ids[t["id"]] = same
            duplicates += 1
            continue
        trial = append_trial(session=session, workload=workloads[t["workload"]], device_class=t["device_class"],
                             config=t["config"], codegen_version=t["codegen_version"], status=t["status"],
                             created_at=t["created_at"], **{k: t.get(k) for k in _TRIAL_FIELDS})
        local_ids[t["id"]] = trial.id
        appended += 1
    return local_ids, appended, duplicates


def _import_heads(parsed: Parsed, local_ids: dict[str, str], session: Session, author: str, now: datetime) -> int:
    """For each key, the exported head (its newest version) is offered to maybe_promote with reason 'import'."""
    heads: dict[tuple[str, str], dict[str, Any]] = {}
    for v in parsed.versions:
        key = (v["workload"], v["device_class"])
        if key not in heads or v["version"] > heads[key]["version"]:
            heads[key] = v
    appended = 0
    for (workload_key, dclass), v in sorted(heads.items()):
        trial = session.get(Trial, local_ids[v["trial"]])
        message = f"imported head v{v['version']} ({v['reason']}) of {workload_key} on {dclass}"
        if maybe_promote(trial, session=session, now=now, reason="import", author=author, message=message):
            appended += 1
    return appended


def _trial_record(t: Trial, workload_key: str) -> dict[str, Any]:
    record = {"type": "trial", "id": t.id, "workload": workload_key, "device_class": t.device_class,
              "config": t.config, "codegen_version": t.codegen_version, "status": t.status}
    record.update({k: getattr(t, k) for k in _TRIAL_FIELDS})
    record["created_at"] = t.created_at.isoformat(timespec="microseconds")
    return record


def _finite(value: Any) -> Any:
    """`value` with every non-finite float as None: rows written before imports were checked may hold NaN."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _dump(obj: dict[str, Any]) -> str:
    """One line of strict JSON (RFC 8259: no NaN or Infinity, which most readers refuse)."""
    return json.dumps(_finite(obj), sort_keys=True, separators=(",", ":"), allow_nan=False)
