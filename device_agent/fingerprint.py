"""The device fingerprint an agent registers with: a dict whose keys are proto DeviceFingerprint's fields.

The server derives the device class (`cpu-x86_64-avx2-2c`, `cuda-nvidia-h100-80gb-hbm3-sm90`) from it.
"""
from __future__ import annotations

import os
import platform
import re
import socket
import subprocess

import compiler_core as cc
from compiler_core.target import CPU_ISAS

# The ISA extensions that matter for generated kernels, in the spelling /proc/cpuinfo uses (arm's asimd = neon).
ISA_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
             "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "neon", "sve", "sve2")
AMX_FLAGS = frozenset({"amx_tile", "amx_bf16"})  # listed only where this process may use the tiles
ARM_ALIASES = {"asimd": "neon"}


class FingerprintError(RuntimeError):
    """The device named on the command line cannot be used (bad name, no pycuda, no such GPU)."""


def parse_device(device: str) -> tuple[str, int]:
    """'cpu' -> ('cpu', 0); 'cuda:1' -> ('cuda', 1); anything else raises FingerprintError."""
    if device == "cpu":
        return "cpu", 0
    m = re.fullmatch(r"cuda(?::(\d+))?", device)
    if not m:
        raise FingerprintError(f"unknown device {device!r}: expected 'cpu' or 'cuda:N'")
    return "cuda", int(m.group(1) or 0)


def fingerprint(device: str, cpus: frozenset[int] = frozenset()) -> dict:
    """`cpus`: the cores a CPU agent measures on (its compute units, part of the device class)."""
    kind, index = parse_device(device)
    return cpu_fingerprint(cpus) if kind == "cpu" else cuda_fingerprint(index)


def _cpuinfo(path: str = "/proc/cpuinfo") -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (key -> value)."""
    fields: dict[str, str] = {}
    try:
        with open(path) as f:
            for line in f:
                if not line.strip():
                    if fields:
                        break
                    continue
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return fields


def isa_flags(info: dict[str, str]) -> list[str]:
    raw = (info.get("flags") or info.get("Features") or "").split()
    present = {ARM_ALIASES.get(f, f) for f in raw}
    if present & AMX_FLAGS and not cc.amx_permitted():  # the class names the ISA the agent's code is built for
        present -= AMX_FLAGS
    return [f for f in ISA_FLAGS if f in present]


CLASS_FLAGS = tuple(isa.class_flag for isa in CPU_ISAS.values())  # what a CPU class is named by, narrow first


def within_target(flags: list[str], target: cc.Target) -> list[str]:
    """`flags` without the ISA levels above what `target` builds for: a host whose flags name a level its compiler
    target does not reach (a VM that hides one flag x86-64-v3 needs, say) is named for the code it runs, which is what
    the tuner checks a registration against (targets.isa_problem)."""
    isa = target.isa
    if isa is None:
        return flags
    above = set(CLASS_FLAGS[CLASS_FLAGS.index(isa.class_flag) + 1:])
    if "amx_bf16" in above:
        above |= AMX_FLAGS
    return [f for f in flags if f not in above]


def first_line(cmd: list[str], containing: str = "") -> str:
    """The first line of `cmd`'s output (the first containing `containing`, if given); '' if it cannot run."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = [line.strip() for line in out.splitlines() if containing in line]
    return lines[0] if lines else ""


def cpu_fingerprint(cpus: frozenset[int] = frozenset()) -> dict:
    info = _cpuinfo()
    model = info.get("model name") or info.get("Model") or platform.processor() or "unknown cpu"
    target = cc.cpu_target(cores=len(cpus or os.sched_getaffinity(0)))
    return {
        "kind": "cpu",
        "device_index": 0,
        "model": model,
        "arch": platform.machine(),
        "isa_flags": within_target(isa_flags(info), target),
        "compute_units": target.cores,
        "memory_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
        "driver_version": "",
        "compiler_version": first_line(["cc", "--version"]),
        "cuda_version": "",
        "hostname": socket.gethostname(),
        "target": target.to_dict(),
    }


def nvidia_driver_version(path: str = "/proc/driver/nvidia/version") -> str:
    """The kernel driver's version ('580.159.04'), '' when not readable."""
    try:
        with open(path) as f:
            m = re.search(r"Kernel Module(?: for \S+)?\s+(\d+(?:\.\d+)+)", f.read())
    except OSError:
        return ""
    return m.group(1) if m else ""


def cuda_fingerprint(index: int) -> dict:
    """Needs pycuda and a visible GPU; reads attributes only (no context is created)."""
    try:
        import pycuda.driver as drv

        from compiler_core.runtime.cuda_runtime import device_target
    except ImportError:
        raise FingerprintError(f"device cuda:{index} needs pycuda: pip install 'tunefarm[gpu]'") from None
    try:
        drv.init()
        count = drv.Device.count()
        if index >= count:
            raise FingerprintError(f"device cuda:{index} does not exist: {count} CUDA device(s) visible")
        dev = drv.Device(index)
        major, minor = dev.compute_capability()
        sms = dev.get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT)
        cuda = drv.get_driver_version()
        name, memory = dev.name(), dev.total_memory()
        target = device_target(index)
    except (drv.Error, cc.BuildError) as exc:
        raise FingerprintError(f"device cuda:{index} unusable: {exc}") from None
    return {
        "kind": "cuda",
        "device_index": index,
        "model": name,
        "arch": f"sm_{major}{minor}",
        "isa_flags": [],
        "compute_units": int(sms),
        "memory_bytes": int(memory),
        "driver_version": nvidia_driver_version(),
        "compiler_version": first_line(["nvcc", "--version"], containing="release"),
        "cuda_version": f"{cuda // 1000}.{cuda % 1000 // 10}",
        "hostname": socket.gethostname(),
        "target": target.to_dict(),
    }
