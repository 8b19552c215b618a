"""Numpy references, seeded random inputs and dtype-aware comparison of kernel outputs."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from compiler_core.ops import get_op
from compiler_core.workload import Workload

# Tolerance relative to the largest reference magnitude: float16 outputs carry ~1e-3 rounding.
TOLERANCE = {"float32": 1e-4, "float16": 1e-2}


@dataclass(frozen=True)
class VerifyResult:
    ok: bool
    max_abs_error: float
    message: str


def random_inputs(workload: Workload, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1.0, 1.0, size=spec.shape).astype(spec.dtype)
            for spec in get_op(workload.op).input_specs(workload)]


def reference(workload: Workload, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Expected outputs in float64."""
    return get_op(workload.op).reference(workload, inputs)


def verify(workload: Workload, outputs: list[np.ndarray], expected: list[np.ndarray]) -> VerifyResult:
    worst = 0.0
    for k, (out, ref) in enumerate(zip(outputs, expected, strict=True)):
        if out.shape != ref.shape:
            return VerifyResult(False, float("inf"), f"output {k}: shape {out.shape} != expected {ref.shape}")
        tol = TOLERANCE[str(out.dtype)]
        got = out.astype(np.float64)
        finite = np.isfinite(ref)
        scale = max(1.0, float(np.abs(ref[finite]).max(initial=0.0)))
        nan_mismatch = np.isnan(got) != np.isnan(ref)
        err = np.abs(np.where(finite, got - ref, 0.0))
        inf_mismatch = ~finite & ~np.isnan(ref) & (got != ref)
        worst = max(worst, float(err.max(initial=0.0)))
        bad = (err > tol * scale) | nan_mismatch | inf_mismatch
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            return VerifyResult(False, worst, f"output {k}: {int(bad.sum())} of {bad.size} elements wrong; "
                                f"first at {idx}: got {got[idx]!r}, expected {ref[idx]!r} (tol {tol * scale:.3g})")
    return VerifyResult(True, worst, "ok")
