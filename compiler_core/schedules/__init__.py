"""Schedule templates: for each (op, target kind) a module with `space(w, target)` and
`schedule(w, config, target) -> Module`; each kind's folder holds its explicit TEMPLATES table, and the kind's
backend (compiler_core.backends) names that folder."""
from __future__ import annotations

from types import ModuleType

from compiler_core.errors import WorkloadError
from compiler_core.schedules import naive


def template_for(op: str, target_kind: str, name: str = "tuned") -> ModuleType:
    """The tuned template of (op, target kind) from the kind's backend, or the knob-less `naive` one when
    name='naive'."""
    if name == "naive":
        return naive
    from compiler_core.backends import backend

    try:
        return backend(target_kind).templates()[op]
    except (KeyError, ValueError):
        raise WorkloadError(f"no schedule template for op {op!r} on target {target_kind!r}") from None
