"""Schedule templates: for each (op, target kind) a module with `space(w, target)` and
`schedule(w, config, target) -> Module`; `TEMPLATES` is the one explicit table."""
from __future__ import annotations

from types import ModuleType

from compiler_core.errors import WorkloadError
from compiler_core.schedules import naive

TEMPLATES: dict[tuple[str, str], ModuleType] = {}


def _register_all() -> None:
    from compiler_core.schedules.cpu import TEMPLATES as CPU
    from compiler_core.schedules.cuda import TEMPLATES as CUDA

    TEMPLATES.update({(op, "c"): mod for op, mod in CPU.items()})
    TEMPLATES.update({(op, "cuda"): mod for op, mod in CUDA.items()})


def template_for(op: str, target_kind: str, name: str = "tuned") -> ModuleType:
    """The tuned template of (op, target), or the knob-less `naive` one when name='naive'."""
    if name == "naive":
        return naive
    if not TEMPLATES:
        _register_all()
    try:
        return TEMPLATES[(op, target_kind)]
    except KeyError:
        raise WorkloadError(f"no schedule template for op {op!r} on target {target_kind!r}") from None
