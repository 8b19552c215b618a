"""Device classes as compiler targets: whether compiler_core can generate code for the target an agent registers
(`target_problem`) and whether it agrees with the ISA the agent's class is named for (`isa_problem`); the target the
agents of a class registered (stored with the class); and the class a job selector ('cpu', 'cuda' or an exact class)
runs on given the agents that are active."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, replace

from sqlalchemy.orm import Session

import compiler_core as cc
from compiler_core.target import CPU_ISAS, cpu_target, cuda_target
from tuner_server.db.models import Device
from tuner_server.device_class import device_kind

# What a CUDA agent reads off its device (compiler_core.runtime.cuda_runtime.device_target) rather than takes from
# its arch: from these lower bounds up to what compiler_core's target of the arch has.
_CUDA_DEVICE_READ = {"max_threads_per_block": 1, "register_file": 1, "max_shared_bytes": 1,
                     "max_dynamic_shared_bytes": 0}
# What an agent chooses or measures: a CPU agent's cores (device.compute_units), a GPU's SMs, the last-level cache.
_FREE = {"c": ("cores", "l2_bytes"), "cuda": ("sm_count", "l2_bytes")}
_COUNTED = {"c": "cores", "cuda": "sm_count"}  # at least one
_X86 = "x86_64"
_HOST_ISA = "sse"  # compiler_core's C target of a machine other than x86-64: '<machine>-sse', 16-byte vectors
_OTHER_MACHINE_ISAS = ("neon", "base")  # the class ISA tokens (device_class.CPU_ISA_PRIORITY) that are not x86-64's


def _reference(target: cc.Target) -> cc.Target:
    """compiler_core's own target of `target`'s kind and arch, with what the agent chooses, measures or reads off its
    device taken from `target`; ValueError saying what arch is allowed when compiler_core has none for it."""
    free = {name: getattr(target, name) for name in _FREE[target.kind]}
    if target.kind == "cuda":
        return replace(cuda_target(target.arch), **free,  # ValueError for an arch before sm_70
                       **{name: getattr(target, name) for name in _CUDA_DEVICE_READ})
    machine, _, suffix = target.arch.rpartition("-")
    if target.isa is not None:
        return replace(cpu_target(target.isa.name, cores=1), **free)
    if machine == _X86:
        raise ValueError(f"an x86-64 C target's arch is 'x86_64-<isa>' with <isa> one of "
                         f"{', '.join(i.arch_suffix for i in CPU_ISAS.values())}, got {target.arch!r}")
    if suffix != _HOST_ISA or len(machine) > 32:
        raise ValueError(f"a C target of a machine other than x86-64 is '<machine>-{_HOST_ISA}' (its compiler's own "
                         f"flags, 16-byte vectors), got {target.arch!r}")
    return replace(cpu_target(_HOST_ISA, cores=1), arch=target.arch, **free)


def target_problem(target: cc.Target) -> tuple[str, str] | None:
    """(field, what is wrong and what is allowed) when compiler_core cannot generate code for `target` as an agent
    registers it: a CUDA arch it has no target for (before sm_70), an x86-64 ISA outside CPU_ISAS, a vector width,
    warp size, tensor-core family or limit other than its own target of that arch has, no cores or SMs; else None.
    """
    try:
        reference = _reference(target)
    except ValueError as exc:
        return "arch", str(exc)
    counted = _COUNTED[target.kind]
    if getattr(target, counted) < 1:
        return counted, f"a {target.kind} target has at least 1, got {getattr(target, counted)}"
    if target.kind == "cuda":
        nominal = cuda_target(target.arch)
        for name, low in _CUDA_DEVICE_READ.items():
            value, high = getattr(target, name), getattr(nominal, name)
            if not low <= value <= high:
                return name, f"must be between {low} and {high} on {target.arch}, got {value}"
    for f in fields(target):
        theirs, ours = getattr(target, f.name), getattr(reference, f.name)
        if theirs != ours:
            return f.name, f"must be {ours!r} on {target.arch} (compiler_core's {target.arch} target), got {theirs!r}"
    return None


def isa_problem(named: str, target: cc.Target) -> str | None:
    """Why a CPU class named for the ISA token `named` (device_class.best_isa of the agent's isa_flags) cannot hold
    the C `target` (the class's spaces and code come from its target, so both must say the same ISA); None when they
    agree: an x86-64 target's ISA ('sse4_2' for x86-64-v2), 'neon' or 'base' for a target of another machine."""
    isa = target.isa
    allowed = _OTHER_MACHINE_ISAS if isa is None else (isa.class_flag,)
    if named in allowed:
        return None
    return (f"name {named!r} as the widest ISA, but device.target is {target.arch!r}: an agent of that target lists "
            f"flags whose widest is {' or '.join(map(repr, allowed))}")


class NoTarget(LookupError):
    """A device class without a stored compiler target (none of its agents registered one)."""


def target_for_class(device_class: str, *, session: Session) -> cc.Target:
    """The compiler target agents of `device_class` generate code for, as the first of them sent it when it
    registered (read off its device: arch with the 'a' of sm_90a, shared-memory and register limits, SMs, L2,
    tensor cores; for a CPU its ISA and cores). NoTarget for an unknown class or one no agent has registered."""
    device = session.get(Device, device_class)
    stored = (device.fingerprint or {}).get("target") if device is not None else None
    if stored is None:
        why = "is unknown" if device is None else "has no compiler target: no agent of it has registered with " \
                                                  "this release"
        raise NoTarget(f"device class {device_class!r} {why}")
    try:
        return cc.Target.from_dict(dict(stored))
    except ValueError as exc:
        raise NoTarget(f"device class {device_class!r}: stored {exc}") from None


def pick_device_class(selector: str, active_by_class: Mapping[str, int]) -> str | None:
    """The class a job runs on: an exact class as is; for 'cpu'/'cuda' the active class of that kind with the
    most agents (ties: alphabetical); None while no such agent is active."""
    if selector not in ("cpu", "cuda"):
        return selector
    candidates = [(-n, c) for c, n in active_by_class.items() if n > 0 and device_kind(c) == selector]
    return min(candidates)[1] if candidates else None
