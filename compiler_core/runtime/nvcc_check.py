"""Compile-check generated CUDA with nvcc (no GPU needed): what the compile sweeps and agents' prechecks use."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from compiler_core.errors import BuildError


def nvcc_available() -> bool:
    return shutil.which("nvcc") is not None


def nvcc_compile(source: str, arch: str = "sm_90", timeout_s: float = 300.0) -> bytes:
    """Returns the cubin; raises BuildError with nvcc's diagnostics on failure."""
    if not nvcc_available():
        raise BuildError("nvcc not found on PATH")
    with tempfile.TemporaryDirectory(prefix="tf-nvcc-") as tmp:
        src, out = Path(tmp) / "kernel.cu", Path(tmp) / "kernel.cubin"
        src.write_text(source)
        cmd = ["nvcc", "-cubin", f"-arch={arch}", "-O3", "-std=c++17", "-o", str(out), str(src)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise BuildError(f"nvcc timed out after {timeout_s:.0f} s") from None
        if proc.returncode != 0:
            raise BuildError(f"nvcc -arch={arch} failed:\n{proc.stderr[-4000:]}")
        return out.read_bytes()
