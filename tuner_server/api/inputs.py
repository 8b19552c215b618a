"""Request inputs to domain values: workloads from (op, params), device classes, and a class's codegen target.

Each failure is an ApiError (or compiler_core's WorkloadError, mapped to 422) that says what is allowed.
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

import compiler_core as cc
from tuner_server import bounds, repo
from tuner_server.api.errors import ApiError


def workload_of(op: str, params: Mapping[str, Any]) -> cc.Workload:
    """Validated workload; WorkloadError (422) names an unknown op, missing/extra params or values out of range."""
    cc.get_op(op)  # unknown op: the message lists the known ones
    return cc.make_workload(op, dict(params))


def parse_as_of(text: str | None) -> datetime | None:
    """ISO 8601 with a zone ('2026-01-01T12:00:00Z') within bounds.EARLIEST .. bounds.LATEST; 422 otherwise."""
    if text is None:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError as exc:
        hint = " (a '+' in a query string reads as a space: write it as %2B)" if " " in text else ""
        raise ApiError(422, f"as_of={text!r} is not an ISO 8601 time: {exc}{hint}") from exc
    problem = bounds.time_problem(value)
    if problem is not None:
        raise ApiError(422, f"as_of={text!r} {problem}",
                       {"earliest": bounds.EARLIEST.isoformat(), "latest": bounds.LATEST.isoformat()})
    return value


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
