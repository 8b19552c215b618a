"""'cpu' or 'cuda' where a device class is asked for: this farm's class of that kind.

One rule for the REST routes that read a device class (api/inputs.py `resolve_device`) and for the client
(`TunefarmClient.resolve_device`, so the CLI's `--device cpu`): `?device=cpu` and `tunefarm best --device cpu` name the
same class. Plain functions, no FastAPI or database: the client imports this module.
"""
from __future__ import annotations

from collections.abc import Iterable

DEVICE_KINDS = ("cpu", "cuda")


class DeviceChoiceError(ValueError):
    """No class of the kind, or several and not exactly one of them online; the message lists them."""


def choose_class(kind: str, classes: Iterable[tuple[str, bool]]) -> str:
    """The class `kind` names among the farm's (device class, online) pairs of that kind: the only one, else the only
    one with an agent online; DeviceChoiceError saying which classes there are otherwise."""
    found = list(classes)
    online = [name for name, is_online in found if is_online]
    if len(found) == 1:
        return found[0][0]
    if len(online) == 1:
        return online[0]
    if not found:
        raise DeviceChoiceError(f"no {kind} device class on this farm yet: no {kind} agent has registered (start one, "
                                "or give an exact device class)")
    listing = ", ".join(f"{name} ({'online' if is_online else 'offline'})" for name, is_online in found)
    raise DeviceChoiceError(f"device {kind!r} is ambiguous on this farm: {len(found)} {kind} classes, {len(online)} "
                            f"online: {listing}; give one of them")
