"""Loading a Python file that is not on the import path (a script, a migration) as a module, for tests."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def module_from_file(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
