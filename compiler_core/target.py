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
import re
from dataclasses import MISSING, dataclass, fields

HOST_COMPILER_FLAGS = ("-march=native",)  # a C target outside CPU_ISAS (a non-x86 host's own): its compiler's


@dataclass(frozen=True)
class CpuIsa:
    name: str  # what cpu_target(isa=) takes
    arch_suffix: str  # the ISA token of Target.arch and of device classes ("avx512f")
    vector_bytes: int
    march: tuple[str, ...]  # compiler flags that select it
    needs: frozenset[str]  # /proc/cpuinfo flags a host must list to run code compiled with `march`

    @property
    def class_flag(self) -> str:
        """The /proc/cpuinfo flag a device class of this ISA is named by: the suffix, but x86-64-v2 ('sse') by its
        widest flag, sse4_2 (tuner_server.device_class.best_isa of an agent's flags)."""
        return "sse4_2" if self.arch_suffix == "sse" else self.arch_suffix


_V2 = frozenset({"cx16", "lahf_lm", "popcnt", "pni", "ssse3", "sse4_1", "sse4_2"})  # x86-64-v2
_V3 = _V2 | {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"}  # x86-64-v3 (abm: lzcnt)

HALF_CONVERSIONS = ("f16c", "bits", "cast")  # Target.half_conversion

# Narrowest first. AVX-512 is x86-64-v3 plus AVX-512F (not v4's BW/DQ/VL): every host whose fingerprint says
# avx512f (its device class's token) runs it, and 16-lane float code needs nothing more. AVX-512 BF16 adds the
# bfloat16 pair dot product (vdpbf16ps: 32 multiply-adds an instruction, twice an FMA's), which GCC's flag brings
# with AVX-512BW; every CPU with it (Cooper Lake, Sapphire Rapids and later, Zen 4 and later) has BW. AMX adds the
# tile registers and their bfloat16 dot product (tdpbf16ps: a 16 x 16 float32 tile += 16 x 32 by 32 x 16 bfloat16,
# 8,192 multiply-adds an instruction; Sapphire Rapids and later): a process must ask Linux for the tiles' state
# first (arch_prctl), so a host runs it only where that request is granted (`amx_permitted`).
_V3_512 = _V3 | {"avx512f"}
_BF16 = _V3_512 | {"avx512bw", "avx512_bf16"}
CPU_ISAS = {
    "sse": CpuIsa("sse", "sse", 16, ("-march=x86-64-v2",), _V2),
    "avx2": CpuIsa("avx2", "avx2", 32, ("-march=x86-64-v3",), _V3),
    "avx512": CpuIsa("avx512", "avx512f", 64, ("-march=x86-64-v3", "-mavx512f"), _V3_512),
    "avx512bf16": CpuIsa("avx512bf16", "avx512_bf16", 64, ("-march=x86-64-v3", "-mavx512f", "-mavx512bf16"), _BF16),
    "amx": CpuIsa("amx", "amx_bf16", 64, ("-march=x86-64-v3", "-mavx512f", "-mavx512bf16", "-mamx-tile", "-mamx-bf16"),
                  _BF16 | {"amx_tile", "amx_bf16"}),
}
_BY_SUFFIX = {isa.arch_suffix: isa for isa in CPU_ISAS.values()}


VECTOR_REGISTERS = {16: 16, 32: 16, 64: 32}  # by vector width in bytes: SSE and AVX2 have 16, AVX-512 32


@dataclass(frozen=True)
class Target:
    """Everything codegen, spaces, resource checks and features may know about a device, as plain data.

    Agents build it from their device (`device_target` in compiler_core.runtime.cuda_runtime, `cpu_target`),
    send it when they register, and the server stores it with the device class: spaces and features on the
    server come from what the device said, never from parsing a class name. `to_dict`/`from_dict` are its wire
    and storage form."""

    kind: str  # "c" or "cuda"
    arch: str  # "x86_64-avx2", "sm_80", "sm_90a" (a: the arch-specific features, e.g. Hopper's wgmma)
    max_threads_per_block: int
    max_shared_bytes: int  # static shared memory per block (CUDA: 48 KiB)
    warp_size: int
    vector_bytes: int  # widest single load/store
    cores: int  # C: OpenMP threads; CUDA: 0
    max_registers_per_thread: int = 255
    register_file: int = 0  # 32-bit registers per multiprocessor (CUDA): a block's threads share them
    max_dynamic_shared_bytes: int = 0  # shared memory per block after the kernel opts in (CUDA); 0: C
    sm_count: int = 0  # multiprocessors (CUDA; 0 when unknown, e.g. a compile-only target)
    l2_bytes: int = 0  # last-level cache (0 when unknown)
    tensor_cores: tuple[str, ...] = ()  # matrix instruction families the device runs: TENSOR_CORE_FAMILIES

    def __post_init__(self) -> None:
        object.__setattr__(self, "tensor_cores", tuple(self.tensor_cores))
        problems = _problems(self)
        if problems:
            raise ValueError(f"invalid target: {'; '.join(problems)}")

    @property
    def vector_lanes_f32(self) -> int:
        return self.vector_bytes // 4

    @property
    def vector_registers(self) -> int:
        """Vector registers a C kernel can keep values in: what bounds a register block of accumulators."""
        return VECTOR_REGISTERS.get(self.vector_bytes, 16)

    @property
    def sm(self) -> int:
        """The compute capability as a number (90 for sm_90 and sm_90a); 0 for C targets."""
        match = _CUDA_ARCH.fullmatch(self.arch) if self.kind == "cuda" else None
        return int(match["sm"]) if match else 0

    @property
    def arch_specific(self) -> bool:
        """sm_90a and the like: code may use the instructions of exactly this compute capability."""
        return self.kind == "cuda" and self.arch.endswith("a")

    @property
    def shared_limit(self) -> int:
        """Shared memory one block may use: the opt-in dynamic limit where the device has one."""
        return max(self.max_shared_bytes, self.max_dynamic_shared_bytes)

    def has_tensor_cores(self, family: str) -> bool:
        return family in self.tensor_cores

    @property
    def isa(self) -> CpuIsa | None:
        """The x86-64 vector ISA of a C target (from its arch), None for CUDA and other machines."""
        machine, _, suffix = self.arch.rpartition("-")
        return _BY_SUFFIX.get(suffix) if self.kind == "c" and machine == "x86_64" else None

    @property
    def bf16_dot(self) -> bool:
        """Whether a C target's ISA has the bfloat16 pair dot product (AVX-512 BF16's vdpbf16ps)."""
        return self.isa is not None and "avx512_bf16" in self.isa.needs

    @property
    def amx(self) -> bool:
        """Whether a C target's ISA has AMX's bfloat16 tile dot product (tdpbf16ps)."""
        return self.isa is not None and "amx_bf16" in self.isa.needs

    @property
    def half_conversion(self) -> str:
        """How a C target's code converts float16 to and from float32 (one of HALF_CONVERSIONS): "f16c" on an x86
        ISA with F16C (one instruction per value or vector; vectors by intrinsics), "bits" on one without (a cast
        would be a libgcc call), "cast" elsewhere (the compiler's own)."""
        isa = self.isa
        if isa is None:
            return "cast"
        return "f16c" if "f16c" in isa.needs else "bits"

    @property
    def march_flags(self) -> tuple[str, ...]:
        """The C compiler's flags that select this target's instruction set."""
        if self.kind != "c":
            return ()
        return self.isa.march if self.isa else HOST_COMPILER_FLAGS

    def to_dict(self) -> dict:
        return {f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v) for f in fields(self)}

    @classmethod
    def from_dict(cls, data) -> Target:
        """The inverse of to_dict; ValueError naming the field for anything missing, unknown or mistyped."""
        if not isinstance(data, dict):
            raise ValueError(f"invalid target: expected an object of target fields, got {type(data).__name__}")
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"invalid target: unknown field(s) {', '.join(unknown)}; known: {', '.join(known)}")
        missing = [n for n, f in known.items() if n not in data and f.default is MISSING]
        if missing:
            raise ValueError(f"invalid target: missing field(s) {', '.join(missing)}")
        for name, value in data.items():
            if name in ("kind", "arch"):
                ok = isinstance(value, str)
            elif name == "tensor_cores":
                ok = isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
            else:
                ok = isinstance(value, int) and not isinstance(value, bool)
            if not ok:
                raise ValueError(f"invalid target: field {name!r} has the wrong type ({value!r})")
        return cls(**data)


TENSOR_CORE_FAMILIES = ("wmma_f16", "mma_bf16", "wgmma")  # WMMA (sm_70+), bfloat16 MMA (sm_80+), sm_90a
_CUDA_ARCH = re.compile(r"sm_(?P<sm>\d{2,3})(?P<a>a?)")
_INT_LIMITS = {"max_threads_per_block": (1, 1 << 16), "max_shared_bytes": (0, 1 << 30), "warp_size": (1, 1024),
               "vector_bytes": (1, 1024), "cores": (0, 1 << 16), "max_registers_per_thread": (1, 1 << 16),
               "register_file": (0, 1 << 24), "max_dynamic_shared_bytes": (0, 1 << 30),
               "sm_count": (0, 1 << 16), "l2_bytes": (0, 1 << 40)}


def _problems(t: Target) -> list[str]:
    out = []
    if t.kind not in ("c", "cuda"):
        out.append(f"kind must be 'c' or 'cuda', got {t.kind!r}")
    elif t.kind == "cuda" and not _CUDA_ARCH.fullmatch(t.arch):
        out.append(f"a CUDA arch is like 'sm_80' or 'sm_90a', got {t.arch!r}")
    elif t.kind == "c" and not re.fullmatch(r"[a-z0-9_]+-[a-z0-9_]+", t.arch):
        out.append(f"a C arch is '<machine>-<isa>' like 'x86_64-avx2', got {t.arch!r}")
    for name, (lo, hi) in _INT_LIMITS.items():
        value = getattr(t, name)
        if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
            out.append(f"{name} must be an integer in [{lo}, {hi}], got {value!r}")
    unknown = [f for f in t.tensor_cores if f not in TENSOR_CORE_FAMILIES]
    if unknown:
        out.append(f"unknown tensor-core families {unknown}; known: {', '.join(TENSOR_CORE_FAMILIES)}")
    return out


def runnable_isas(cpu_flags) -> tuple[str, ...]:
    """The names of CPU_ISAS whose needed flags are all in `cpu_flags` (narrowest first)."""
    return tuple(name for name, isa in CPU_ISAS.items() if isa.needs <= set(cpu_flags))


@functools.cache
def host_isas() -> tuple[str, ...]:
    """The CPU_ISAS this machine runs, narrowest first; () off x86-64. AMX only where this process may use the tiles
    (`amx_permitted`): an old kernel or a sandbox that refuses the request leaves the CPU's AMX unusable."""
    if platform.machine() != "x86_64":
        return ()
    runnable = runnable_isas(_cpu_flags())
    return tuple(isa for isa in runnable if not CPU_ISAS[isa].needs & {"amx_tile"} or amx_permitted())


# Linux's arch_prctl request for a dynamically enabled state component (the AMX tiles' data, XFEATURE 18): every
# process that uses the tiles makes it once (generated code does, before its first tile instruction).
SYS_ARCH_PRCTL = 158
ARCH_REQ_XCOMP_PERM = 0x1023
XFEATURE_XTILEDATA = 18


@functools.cache
def amx_permitted() -> bool:
    """Whether Linux grants this process the AMX tile state (and so, any process on this host that asks)."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.syscall(SYS_ARCH_PRCTL, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0
    except (OSError, AttributeError):
        return False


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
    """A C target for `isa` (a name of CPU_ISAS; None: the widest this host runs), with `cores` OpenMP
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


@dataclass(frozen=True)
class _CudaArchLimits:
    """What every device of a compute capability has (CUDA C Programming Guide, compute capabilities table)."""

    dynamic_shared: int  # per block, after opt-in
    tensor_cores: tuple[str, ...]


# Register file (64 Ki 32-bit registers per SM), 48 KiB static shared memory, 1024 threads, 255 registers per
# thread and 32-thread warps hold for sm_70 .. sm_90; the opt-in shared memory and tensor cores differ.
_CUDA_ARCHES = {
    70: _CudaArchLimits(96 * 1024, ("wmma_f16",)),
    72: _CudaArchLimits(96 * 1024, ("wmma_f16",)),
    75: _CudaArchLimits(64 * 1024, ("wmma_f16",)),
    80: _CudaArchLimits(163 * 1024, ("wmma_f16", "mma_bf16")),
    86: _CudaArchLimits(99 * 1024, ("wmma_f16", "mma_bf16")),
    87: _CudaArchLimits(163 * 1024, ("wmma_f16", "mma_bf16")),
    89: _CudaArchLimits(99 * 1024, ("wmma_f16", "mma_bf16")),
    90: _CudaArchLimits(227 * 1024, ("wmma_f16", "mma_bf16")),
}
_WGMMA_ARCHES = {"sm_90a"}  # wgmma and setmaxnreg exist only in the arch-specific sm_90a
# What rules that weigh work against the SMs (a template's default tile, waves in the features) assume when a
# compile-only target does not know its SM count: an H100 SXM's. Agents' targets carry the device's own.
NOMINAL_SM_COUNT = 132


def cuda_target(arch: str = "sm_90", *, sm_count: int = 0, l2_bytes: int = 0,
                max_dynamic_shared_bytes: int | None = None) -> Target:
    """A CUDA device of compute capability `arch` ('sm_80', 'sm_90a', ...), with the limits every device of it
    has; an agent passes what it read off its device (`device_target`), a compile-only target leaves them."""
    match = _CUDA_ARCH.fullmatch(arch) if isinstance(arch, str) else None
    sm = int(match["sm"]) if match else 0
    if sm < 70 or (match["a"] and sm < 90):
        raise ValueError(f"unsupported CUDA arch {arch!r}: expected sm_70 or newer, e.g. 'sm_80', 'sm_90', "
                         "'sm_90a' (the 'a' suffix exists from sm_90 on)")
    limits = _CUDA_ARCHES.get(sm) or _CUDA_ARCHES[max(k for k in _CUDA_ARCHES if k <= sm)]
    families = limits.tensor_cores + (("wgmma",) if arch in _WGMMA_ARCHES else ())
    return Target(
        kind="cuda",
        arch=arch,
        max_threads_per_block=1024,
        max_shared_bytes=48 * 1024,
        warp_size=32,
        vector_bytes=16,
        cores=0,
        register_file=65536,
        max_dynamic_shared_bytes=limits.dynamic_shared if max_dynamic_shared_bytes is None
        else max_dynamic_shared_bytes,
        sm_count=sm_count,
        l2_bytes=l2_bytes,
        tensor_cores=families,
    )
