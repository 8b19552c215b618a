"""Target descriptions: the limits codegen and spaces respect are data, not code."""
from __future__ import annotations

import os
import platform
from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    kind: str  # "c" or "cuda"
    arch: str  # "x86_64-avx2", "sm_90", ...
    max_threads_per_block: int
    max_shared_bytes: int
    warp_size: int
    vector_bytes: int  # widest single load/store
    cores: int
    max_registers_per_thread: int = 255

    @property
    def vector_lanes_f32(self) -> int:
        return self.vector_bytes // 4

    @property
    def sm(self) -> int:
        return int(self.arch.split("_")[1]) if self.kind == "cuda" else 0


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_target(cores: int | None = None) -> Target:
    """The host CPU: vector width from its ISA flags, OpenMP threads = cores (or `cores`)."""
    flags = _cpu_flags()
    isa = "avx512f" if "avx512f" in flags else "avx2" if "avx2" in flags else "sse"
    vector_bytes = {"avx512f": 64, "avx2": 32}.get(isa, 16)
    return Target(
        kind="c",
        arch=f"{platform.machine()}-{isa}",
        max_threads_per_block=1,
        max_shared_bytes=0,
        warp_size=1,
        vector_bytes=vector_bytes,
        cores=cores or len(os.sched_getaffinity(0)),
    )


def cuda_target(arch: str = "sm_90") -> Target:
    """A CUDA device of compute capability `arch`; 48 KiB is the static shared-memory limit per block."""
    if not arch.startswith("sm_") or not arch[3:].isdigit() or int(arch[3:]) < 70:
        raise ValueError(f"unsupported CUDA arch {arch!r}: expected sm_70 or newer, e.g. 'sm_80', 'sm_90'")
    return Target(
        kind="cuda",
        arch=arch,
        max_threads_per_block=1024,
        max_shared_bytes=48 * 1024,
        warp_size=32,
        vector_bytes=16,
        cores=0,
    )
