"""Device classes as compiler targets: the target agents of a class registered (stored with the class), and the
class a job selector ('cpu', 'cuda' or an exact class) runs on given the agents that are active."""
from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy.orm import Session

import compiler_core as cc
from tuner_server.db.models import Device
from tuner_server.device_class import device_kind


class NoTarget(LookupError):
    """A device class without a stored compiler target (none of its agents registered one)."""


def target_for_class(device_class: str, *, session: Session) -> cc.Target:
    """The compiler target agents of `device_class` generate code for, as the first of them sent it when it
    registered (read off its device: arch with the 'a' of sm_90a, shared-memory and register limits, SMs, L2,
    tensor cores; for a CPU its ISA and cores). NoTarget for an unknown class or one no agent has registered."""
    device = session.get(Device, device_class)
    stored = (device.fingerprint or {}).get("target") if device is not None else None
    if stored is None:
        why = "is unknown" if device is None else "has no compiler target: no agent of it has registered with " \
                                                  "this release"
        raise NoTarget(f"device class {device_class!r} {why}")
    try:
        return cc.Target.from_dict(dict(stored))
    except ValueError as exc:
        raise NoTarget(f"device class {device_class!r}: stored {exc}") from None


def pick_device_class(selector: str, active_by_class: Mapping[str, int]) -> str | None:
    """The class a job runs on: an exact class as is; for 'cpu'/'cuda' the active class of that kind with the
    most agents (ties: alphabetical); None while no such agent is active."""
    if selector not in ("cpu", "cuda"):
        return selector
    candidates = [(-n, c) for c, n in active_by_class.items() if n > 0 and device_kind(c) == selector]
    return min(candidates)[1] if candidates else None
