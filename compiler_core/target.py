"""Target descriptions: the limits codegen and spaces respect are data, not code.

A C target's vector ISA is named by the suffix of its arch (`x86_64-avx2`); CPU_ISAS gives each ISA its
vector width, the compiler flags that select it and the /proc/cpuinfo flags a host needs to run the result.
Targets are plain data, so one can be made for an ISA the host lacks: its code can be generated and
compiled, just not run here (`host_runs`).
"""
from __future__ import annotations

import functools
import os
import platform
from dataclasses import dataclass

HOST_COMPILER_FLAGS = ("-march=native",)  # a C target outside CPU_ISAS (a non-x86 host's own): its compiler's


@dataclass(frozen=True)
class CpuIsa:
    name: str  # what cpu_target(isa=) takes
    arch_suffix: str  # the ISA token of Target.arch and of device classes ("avx512f")
    vector_bytes: int
    march: tuple[str, ...]  # compiler flags that select it
    needs: frozenset[str]  # /proc/cpuinfo flags a host must list to run code compiled with `march`


_V2 = frozenset({"cx16", "lahf_lm", "popcnt", "pni", "ssse3", "sse4_1", "sse4_2"})  # x86-64-v2
_V3 = _V2 | {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"}  # x86-64-v3 (abm: lzcnt)

# Narrowest first. AVX-512 is x86-64-v3 plus AVX-512F (not v4's BW/DQ/VL): every host whose fingerprint says
# avx512f (its device class's token) runs it, and 16-lane float code needs nothing more.
CPU_ISAS = {
    "sse": CpuIsa("sse", "sse", 16, ("-march=x86-64-v2",), _V2),
    "avx2": CpuIsa("avx2", "avx2", 32, ("-march=x86-64-v3",), _V3),
    "avx512": CpuIsa("avx512", "avx512f", 64, ("-march=x86-64-v3", "-mavx512f"), _V3 | {"avx512f"}),
}
_BY_SUFFIX = {isa.arch_suffix: isa for isa in CPU_ISAS.values()}


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

    @property
    def isa(self) -> CpuIsa | None:
        """The x86-64 vector ISA of a C target (from its arch), None for CUDA and other machines."""
        machine, _, suffix = self.arch.rpartition("-")
        return _BY_SUFFIX.get(suffix) if self.kind == "c" and machine == "x86_64" else None

    @property
    def march_flags(self) -> tuple[str, ...]:
        """The C compiler's flags that select this target's instruction set."""
        if self.kind != "c":
            return ()
        return self.isa.march if self.isa else HOST_COMPILER_FLAGS


def runnable_isas(cpu_flags) -> tuple[str, ...]:
    """The names of CPU_ISAS whose needed flags are all in `cpu_flags` (narrowest first)."""
    return tuple(name for name, isa in CPU_ISAS.items() if isa.needs <= set(cpu_flags))


@functools.cache
def host_isas() -> tuple[str, ...]:
    """The CPU_ISAS this machine runs, narrowest first; () off x86-64."""
    return runnable_isas(_cpu_flags()) if platform.machine() == "x86_64" else ()


def host_runs(target: Target) -> bool:
    """Whether code generated and compiled for a C `target` runs on this machine."""
    if target.isa is not None:
        return target.isa.name in host_isas()
    return target.kind == "c" and target.arch.rpartition("-")[0] == platform.machine() and not host_isas()


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_target(isa: str | None = None, cores: int | None = None) -> Target:
    """A C target for `isa` ("sse", "avx2" or "avx512"; None: the widest this host runs), with `cores` OpenMP
    threads (None: the cores this process may use). Off x86-64 the host is `<machine>-sse` with 16-byte vectors
    and its compiler's own flags."""
    if isa is None:
        runnable = host_isas()
        if not runnable and platform.machine() == "x86_64":
            raise RuntimeError("this x86-64 CPU lacks x86-64-v2 (SSE4.2), the narrowest ISA tunefarm compiles for")
        isa = runnable[-1] if runnable else None
    elif isa not in CPU_ISAS:
        raise ValueError(f"unknown CPU ISA {isa!r}: expected one of {', '.join(CPU_ISAS)}")
    spec = CPU_ISAS.get(isa)
    return Target(
        kind="c",
        arch=f"x86_64-{spec.arch_suffix}" if spec else f"{platform.machine()}-sse",
        max_threads_per_block=1,
        max_shared_bytes=0,
        warp_size=1,
        vector_bytes=spec.vector_bytes if spec else 16,
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
