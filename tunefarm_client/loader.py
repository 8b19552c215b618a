"""load_best: fetch the best schedule of (op, params, device class) and rebuild it here as a callable kernel.

The kernel is built by this machine's compiler_core (C through ctypes, CUDA through pycuda) for the target the
schedule was tuned on (the server sends it). A record made by a different code generator is refused unless
`allow_version_mismatch=True`: the kernel built here would not be the one that was timed and verified.
"""
from __future__ import annotations

import platform
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

import compiler_core as cc
from tunefarm_client.client import TunefarmClient
from tuner_server.api.prediction import PredictedBest
from tuner_server.api.schemas import BestPublic

Schedule = BestPublic | PredictedBest


class LoadError(RuntimeError):
    """The best schedule exists but cannot be turned into a kernel on this machine; the message says why."""


class CodegenVersionMismatch(LoadError):
    """The record's codegen_version differs from this compiler_core's."""


@dataclass
class LoadedKernel:
    """A compiled kernel and the schedule record it came from. Call it like compiler_core's Kernel:
    `kernel(*inputs, *outputs)` writes the outputs; `kernel.run(*inputs)` allocates and returns them."""

    kernel: cc.Kernel
    schedule: Schedule  # a PredictedBest (`schedule.predicted`) only when load_best was asked to predict

    def __call__(self, *arrays: np.ndarray) -> None:
        self.kernel(*arrays)

    def run(self, *inputs: np.ndarray) -> list[np.ndarray]:
        """Every input of the op (ValueError naming a missing one), in op order; returns the outputs."""
        return self.kernel.run(*inputs)

    @property
    def source(self) -> str:
        return self.kernel.source


def _label(best: Schedule) -> str:
    return "a prediction" if best.predicted else f"v{best.version}"


def check_codegen_version(best: Schedule, allow_mismatch: bool) -> None:
    local = cc.codegen_version()
    if best.codegen_version == local:
        return
    if best.predicted:
        why = (f"the predicted config of {best.workload} on {best.device_class} was ranked and generated with "
               f"codegen_version {best.codegen_version}, but this compiler_core is {local}: pass "
               "allow_version_mismatch=True to build it anyway")
        if not allow_mismatch:
            raise CodegenVersionMismatch(why)
        warnings.warn(why, stacklevel=3)
        return
    why = (f"the best schedule of {best.workload} on {best.device_class} (version {best.version}, trial "
           f"{best.trial_id}) was measured with codegen_version {best.codegen_version}, but this compiler_core is "
           f"{local}: a kernel built here comes from a different code generator than the one that was timed and "
           "verified, so the record's runtime (and even its config's validity) may not hold. Re-tune with agents "
           "running this compiler_core, or pass allow_version_mismatch=True to build it anyway.")
    if not allow_mismatch:
        raise CodegenVersionMismatch(why)
    warnings.warn(why, stacklevel=3)


def tuned_target(best: Schedule) -> cc.Target:
    """The target the schedule was tuned for, after checking this machine can run code generated for it."""
    hint = "pass target= (e.g. compiler_core.cpu_target()) to rebuild the config for this machine instead"
    if best.target is None:
        raise LoadError(f"{best.device_class} has no registered compiler target on this farm (imported history): "
                        f"{hint}")
    target = cc.Target.from_dict(best.target.model_dump())
    if target.kind == "c":
        local = cc.cpu_target()
        tuned_arch, local_arch = target.arch.split("-")[0], platform.machine()
        if tuned_arch != local_arch or local.vector_bytes < target.vector_bytes:
            raise LoadError(f"{best.device_class} was tuned for {target.arch} with {target.vector_bytes}-byte "
                            f"vectors; this machine is {local.arch} with {local.vector_bytes}-byte vectors: {hint}")
        return target
    from compiler_core.runtime.cuda_runtime import cuda_available, device_arch

    if not cuda_available():
        raise LoadError(f"{best.device_class} is a CUDA class, and there is no CUDA device or pycuda here")
    if device_arch() != target.arch:
        raise LoadError(f"{best.device_class} was tuned for {target.arch}; this GPU is {device_arch()}: {hint}")
    return target


def load_best(client: TunefarmClient, op: str, params: dict[str, Any], device: str, target: cc.Target | None = None,
              *, allow_version_mismatch: bool = False, version: int | None = None, predict: bool = False,
              cache_dir=None) -> LoadedKernel:
    """The head schedule (or `version`) of (op, params) on device class `device` ('cpu'/'cuda': the farm's class
    of that kind, see TunefarmClient.resolve_device), compiled here. With `predict`, a shape nobody tuned gets the
    config the class's cost model ranks best (`LoadedKernel.schedule.predicted` says so; it was never measured).

    `target`: build for this target instead of the one the schedule was tuned for (no machine check then).
    Raises TunefarmError when the server has no such schedule, LoadError (CodegenVersionMismatch) when it
    cannot or should not be built here.
    """
    best = client.best(op, params, client.resolve_device(device), version=version, predict=predict)
    check_codegen_version(best, allow_version_mismatch)
    chosen = target if target is not None else tuned_target(best)
    workload = cc.parse_key(best.workload)
    try:
        kernel = cc.build(workload, best.config, chosen, cache_dir=cache_dir)
    except (cc.ConfigError, cc.ResourceError, cc.WorkloadError) as exc:
        raise LoadError(f"the config of {best.workload} {_label(best)} is not valid for {chosen.arch}: {exc}") from exc
    except cc.BuildError as exc:
        raise LoadError(f"building {best.workload} {_label(best)} for {chosen.arch} failed: {exc}") from exc
    return LoadedKernel(kernel, best)
