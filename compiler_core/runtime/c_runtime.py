"""Compile generated C into a shared library (cached by source hash) and call it through ctypes."""
from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import tempfile
import threading
from pathlib import Path

from compiler_core.errors import BuildError
from compiler_core.target import cpu_target

CFLAGS = ("-O3", "-fopenmp", "-fPIC", "-shared", "-std=gnu11",
          # inf/NaN semantics stay (no -ffinite-math-only). No -fassociative-math: templates vectorize with
          # explicit vector types or `omp simd`, and regrouping broke exact cancellations they rely on
          # (layernorm's sum of x - x[0] became sum(x) - n*x[0]: order-1 errors on constant rows, AVX2 only);
          # dropping it changed no template's speed beyond noise (0.95-1.08x over 24 configs, 2026-11-25).
          "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=fast")


def default_cache_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"tunefarm-{os.getuid()}" / "c"


def compile_shared_library(source: str, cache_dir: Path | None = None, compiler: str = "cc",
                           timeout_s: float = 120.0, march: tuple[str, ...] | None = None) -> Path:
    """Builds (or finds in the cache) the library; `march` selects the instruction set (a target's
    `march_flags`; None: the host's, as `cpu_target()` has them). Nothing is loaded: a library for an
    ISA this host lacks builds all the same."""
    flags = (*CFLAGS, *(cpu_target().march_flags if march is None else march))
    cache_dir = Path(cache_dir or default_cache_dir())
    cache_dir.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256((compiler + " ".join(flags) + source).encode()).hexdigest()[:24]
    lib = cache_dir / f"k_{digest}.so"
    if lib.exists():
        return lib
    # Per-builder names: threads of one process may build the same source at once (equal configs).
    builder = f"{os.getpid()}.{threading.get_ident()}"
    src = cache_dir / f"k_{digest}.{builder}.c"
    src.write_text(source)
    tmp = cache_dir / f"k_{digest}.{builder}.tmp.so"
    try:
        proc = subprocess.run([compiler, *flags, str(src), "-o", str(tmp), "-lm"],
                              capture_output=True, text=True, timeout=timeout_s)
    except FileNotFoundError:
        raise BuildError(f"C compiler {compiler!r} not found") from None
    except subprocess.TimeoutExpired:
        raise BuildError(f"C compiler timed out after {timeout_s:.0f} s") from None
    if proc.returncode != 0:
        raise BuildError(f"C compile failed:\n{proc.stderr[-4000:]}")
    os.replace(tmp, lib)  # atomic: concurrent builders of the same source never see a partial file
    src.unlink(missing_ok=True)
    return lib


class CLibrary:
    """A loaded kernel library; `call(ptrs)` runs `tf_entry` on raw host pointers."""

    def __init__(self, path: Path, num_args: int) -> None:
        self.path = path
        self._lib = ctypes.CDLL(str(path))
        self._entry = self._lib.tf_entry
        self._entry.argtypes = [ctypes.c_void_p] * num_args
        self._entry.restype = ctypes.c_int

    def run_host(self, arrays: list) -> None:
        self.call([a.ctypes.data for a in arrays])

    def call(self, ptrs: list[int]) -> None:
        if self._entry(*ptrs) != 0:
            raise MemoryError("kernel workspace allocation failed")
