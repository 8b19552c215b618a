"""codegen_version(): a short hash of compiler_core's own source, stamped on every trial.

Any change to a .py file under the package (lowering, passes, codegen, features, ...) gives a new
version, so records made by an older code generator are never mixed silently with new ones.
"""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent
VERSION_CHARS = 16


def source_digest(root: Path = PACKAGE_ROOT) -> str:
    """sha256 over every .py file under `root`, sorted by relative path: each path, then its bytes."""
    h = hashlib.sha256()
    files = sorted((p.relative_to(root).as_posix(), p) for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    for rel, path in files:
        data = path.read_bytes()
        # Length-prefixed so that moving bytes between a name and a file, or between files, changes the hash.
        h.update(f"{rel}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()[:VERSION_CHARS]


@functools.cache
def codegen_version() -> str:
    """16 hex characters identifying this compiler_core source tree; computed once per process."""
    return source_digest()
