"""Compile generated CUDA to a cubin with nvcc (no GPU needed), cached by source hash like the C libraries.

A farm compiles the same (workload, config) more than once: a head-to-head comparison rebuilds the head and its
challenger, a re-validated head is built again, two agents of one host tune the same workload. The cache key
holds nvcc's own version line, the flags and the arch, so a toolkit upgrade never reuses an old cubin.
"""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from compiler_core.errors import BuildError


def nvcc_available() -> bool:
    return shutil.which("nvcc") is not None


NVCC_FLAGS = ("-O3", "-std=c++17")


def default_cache_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"tunefarm-{os.getuid()}" / "cubin"


@functools.lru_cache(maxsize=1)
def nvcc_version() -> str:
    """nvcc's last --version line (release and build); '' when it cannot say."""
    try:
        out = subprocess.run(["nvcc", "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    lines = out.strip().splitlines()
    return lines[-1] if lines else ""


def nvcc_compile(source: str, arch: str = "sm_90", timeout_s: float = 300.0, cache_dir: Path | None = None,
                 use_cache: bool = True) -> bytes:
    """Returns the cubin (from the cache when this source, arch and nvcc built it before); raises BuildError with
    nvcc's diagnostics on failure. Failures are not cached: a timeout may not repeat."""
    if not nvcc_available():
        raise BuildError("nvcc not found on PATH")
    flags = (gencode(arch), *NVCC_FLAGS)
    cached = None
    if use_cache:
        cache = Path(cache_dir or default_cache_dir())
        digest = hashlib.sha256("\0".join((nvcc_version(), *flags, source)).encode()).hexdigest()[:24]
        cached = cache / f"k_{digest}.cubin"
        try:
            return cached.read_bytes()
        except OSError:
            pass
    cubin = _run_nvcc(source, flags, timeout_s)
    if cached is not None:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_name(f"{cached.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_bytes(cubin)
            os.replace(tmp, cached)  # atomic: a concurrent reader sees the whole cubin or none
        except OSError:
            pass  # a read-only or full cache directory costs a rebuild next time, nothing more
    return cubin


def gencode(arch: str) -> str:
    """nvcc's flag for machine code of exactly `arch` ('sm_90a' -> -gencode=arch=compute_90a,code=sm_90a): the
    -arch=sm_90a shorthand also runs a plain compute_90 pass in some nvcc releases, which rejects wgmma."""
    number = arch.removeprefix("sm_")
    return f"-gencode=arch=compute_{number},code=sm_{number}"


def _run_nvcc(source: str, flags: tuple[str, ...], timeout_s: float) -> bytes:
    arch = "sm_" + flags[0].rpartition("sm_")[2]
    with tempfile.TemporaryDirectory(prefix="tf-nvcc-") as tmp:
        src, out = Path(tmp) / "kernel.cu", Path(tmp) / "kernel.cubin"
        src.write_text(source)
        cmd = ["nvcc", "-cubin", *flags, "-o", str(out), str(src)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise BuildError(f"nvcc timed out after {timeout_s:.0f} s") from None
        if proc.returncode != 0:
            raise BuildError(f"nvcc for {arch} failed:\n{proc.stderr[-4000:]}")
        return out.read_bytes()
