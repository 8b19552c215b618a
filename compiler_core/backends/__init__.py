"""The backend table: everything compiler_core does differently per kind of target, one record per kind.

A backend names its templates (op -> schedule module), its literal list of lowering passes, its renderer,
its ahead-of-time compiler (what an agent's build pool runs) and its loader (a compiled module made callable).
A new kind of target is one module beside c.py and cuda.py plus its templates folder under schedules/.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType


@dataclass(frozen=True)
class Backend:
    kind: str  # Target.kind ("c", "cuda")
    device_kind: str  # what agents and device classes call such a device ("cpu", "cuda")
    templates_module: str  # the package whose TEMPLATES maps op names to schedule modules
    passes: tuple  # lowering, in this literal order: each pass(module, target) -> module
    render: Callable  # render(module, target) -> source text
    compile: Callable  # compile(source, target, cache_dir=None) -> artifact (library path, cubin bytes)
    load: Callable  # load(module, source, target, artifact=None, cache_dir=None) -> runtime with call(arrays)

    def templates(self) -> dict[str, ModuleType]:
        return importlib.import_module(self.templates_module).TEMPLATES


_MODULES = {"c": "compiler_core.backends.c", "cuda": "compiler_core.backends.cuda"}


def backend(kind: str) -> Backend:
    """The backend of a Target.kind; ValueError naming the known kinds."""
    try:
        return importlib.import_module(_MODULES[kind]).BACKEND
    except KeyError:
        raise ValueError(f"unknown target kind {kind!r}: expected one of {', '.join(_MODULES)}") from None


def backend_for_device(device_kind: str) -> Backend:
    """The backend of an agent's device kind ('cpu' -> C, 'cuda' -> CUDA)."""
    for kind in _MODULES:
        b = backend(kind)
        if b.device_kind == device_kind:
            return b
    raise ValueError(f"unknown device kind {device_kind!r}: expected one of "
                     f"{', '.join(backend(k).device_kind for k in _MODULES)}")


KINDS = tuple(_MODULES)
