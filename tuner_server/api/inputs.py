"""Request inputs to domain values: workloads from (op, params), device classes ('cpu' or 'cuda' resolved to the
farm's class of that kind), and times.

Each failure is an ApiError (or compiler_core's WorkloadError, mapped to 422) that says what is allowed.
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

import compiler_core as cc
from tuner_server import bounds, repo
from tuner_server.api.device_kinds import DEVICE_KINDS, DeviceChoiceError, choose_class
from tuner_server.api.errors import ApiError
from tuner_server.api.query_rules import echo


def workload_of(op: str, params: Mapping[str, Any]) -> cc.Workload:
    """Validated workload; WorkloadError (422) names an unknown op, missing/extra params or values out of range.

    An integer param is an integer: a JSON number in a body (a query string's are read as integers already, from
    plain digits only: api/query_rules.py). A string such as "16" is a 422 naming the param, not converted
    (compiler_core reads "16" as 16 for workload keys and the CLI's name=value text; a JSON body has numbers)."""
    opdef = cc.get_op(op)  # unknown op: the message lists the known ones
    for param in opdef.params:
        value = params.get(param.name)
        if param.kind == "int" and isinstance(value, str):
            raise ApiError(422, f"body.params.{param.name}: {echo(value)!r} is a string; {param.name} is an integer "
                                f"from {param.lo} to {param.hi}, sent as a JSON number ({param.name}: 64, not "
                                f"\"64\")", {"param": param.name, "minimum": param.lo, "maximum": param.hi})
    return cc.make_workload(op, dict(params))


def parse_as_of(text: str | None) -> datetime | None:
    """ISO 8601 with a zone ('2026-01-01T12:00:00Z') within bounds.EARLIEST .. bounds.LATEST; 422 otherwise, saying
    what is wrong and what is allowed (bounds.parse_time)."""
    if text is None:
        return None
    try:
        return bounds.parse_time(text)
    except ValueError as exc:
        hint = " (a '+' in a query string reads as a space: write it as %2B)" if " " in text else ""
        raise ApiError(422, f"as_of={echo(text)!r} {exc}{hint}",
                       {"earliest": bounds.EARLIEST.isoformat(), "latest": bounds.LATEST.isoformat()}) from None


def unknown_device(device_class: str, session: Session) -> ApiError | None:
    """An error listing the known classes when `device_class` is not one of them; None when it is."""
    known = [d.device_class for d in repo.list_devices(session=session)]
    if device_class in known:
        return None
    return ApiError(422, f"unknown device class {device_class!r}; known: {', '.join(known) or 'none registered yet'}",
                    {"known_device_classes": known})


def require_device(device_class: str, session: Session) -> str:
    error = unknown_device(device_class, session)
    if error is not None:
        raise error
    return device_class


def resolve_device(device: str, session: Session) -> str:
    """An exact device class as is; 'cpu' or 'cuda' -> the farm's class of that kind (api/device_kinds.py, the rule
    the client's --device follows): 422 listing the known classes where there is none or it is ambiguous."""
    if device not in DEVICE_KINDS:
        return device
    devices = repo.list_devices(session=session)
    try:
        return choose_class(device, [(d.device_class, d.active_agents > 0) for d in devices if d.kind == device])
    except DeviceChoiceError as exc:
        known = [d.device_class for d in devices]
        raise ApiError(422, f"device={device}: {exc}", {"known_device_classes": known}) from None
