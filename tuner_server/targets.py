"""Device classes as compiler targets: the target an agent of a class builds for, and the class a job selector
('cpu', 'cuda' or an exact class) runs on given the agents that are active."""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

import compiler_core as cc
from tuner_server.device_class import device_kind

_CLASS_ISAS = {"avx512f": "avx512", "avx2": "avx2"}  # a class's ISA token -> cc.cpu_target's isa (else "sse")
_CPU_CLASS = re.compile(r"cpu-(?P<arch>.+)-(?P<isa>[a-z0-9_]+)-(?P<cores>\d+)c")
_CUDA_CLASS = re.compile(r"cuda-.+-sm(?P<sm>\d+)")


def target_for_class(device_class: str) -> cc.Target:
    """The compiler target an agent of `device_class` builds for (as its own cc.cpu_target()/cuda_target()):
    CPU vector width from the class's best ISA, threads from its core count; CUDA from its sm number."""
    if match := _CPU_CLASS.fullmatch(device_class):
        target = cc.cpu_target(isa=_CLASS_ISAS.get(match["isa"], "sse"), cores=int(match["cores"]))
        return dataclasses.replace(target, arch=f"{match['arch']}-{target.arch.rpartition('-')[2]}")
    if match := _CUDA_CLASS.fullmatch(device_class):
        return cc.cuda_target(f"sm_{match['sm']}")
    raise ValueError(f"cannot derive a compiler target from device class {device_class!r}")


def pick_device_class(selector: str, active_by_class: Mapping[str, int]) -> str | None:
    """The class a job runs on: an exact class as is; for 'cpu'/'cuda' the active class of that kind with the
    most agents (ties: alphabetical); None while no such agent is active."""
    if selector not in ("cpu", "cuda"):
        return selector
    candidates = [(-n, c) for c, n in active_by_class.items() if n > 0 and device_kind(c) == selector]
    return min(candidates)[1] if candidates else None
