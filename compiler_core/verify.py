"""Checking kernel outputs: deterministic input sets, float64 references with per-element tolerances from
each op's error model (ops/error_models.py), and the comparison.

    sets = input_sets(workload, seed)            # "random", then "hard" (the op's adversarial inputs)
    expected = expect(workload, sets[0].arrays)  # cacheable: Expected.save / Expected.load
    result = verify(workload, kernel.run(*sets[0].arrays), expected)

NaN is expected where the reference is NaN, the same infinity where it is infinite; an infinite tolerance
marks an element float32 cannot be held to (its math leaves float32's range) and is not checked.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from compiler_core.dtypes import numpy_dtype
from compiler_core.ops import get_op
from compiler_core.workload import Workload

HARD_SEED_SALT = 0x4A5D  # the hard set draws from its own stream, so it never repeats the random one
# Ops without an error model (a plugin's custom op): the old whole-output check, relative to the largest
# reference magnitude (at least 1); float16 outputs carry ~5e-4 rounding, bfloat16 ones ~4e-3.
FALLBACK_TOLERANCE = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 5e-2}


@dataclass(frozen=True)
class VerifyResult:
    ok: bool
    max_abs_error: float
    message: str


@dataclass(frozen=True)
class InputSet:
    name: str
    arrays: list


@dataclass(frozen=True)
class Expected:
    """float64 reference outputs and per-element float64 tolerances (each broadcastable to its output)."""
    outputs: list
    tolerance: list

    def save(self, path_or_file) -> None:
        arrays = {f"output_{k}": a for k, a in enumerate(self.outputs)}
        arrays.update({f"tolerance_{k}": t for k, t in enumerate(self.tolerance)})
        if hasattr(path_or_file, "write"):
            np.savez(path_or_file, **arrays)
            return
        with open(path_or_file, "wb") as f:  # a file object: np.savez would append .npz to a bare name
            np.savez(f, **arrays)

    @classmethod
    def load(cls, path) -> Expected:
        with np.load(Path(path), allow_pickle=False) as data:
            n = sum(1 for name in data.files if name.startswith("output_"))
            return cls([data[f"output_{k}"] for k in range(n)], [data[f"tolerance_{k}"] for k in range(n)])


def random_inputs(workload: Workload, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1.0, 1.0, size=spec.shape).astype(numpy_dtype(spec.dtype))
            for spec in get_op(workload.op).input_specs(workload)]


def hard_inputs(workload: Workload, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng([HARD_SEED_SALT, seed])
    return get_op(workload.op).hard_inputs(workload, rng)


def input_sets(workload: Workload, seed: int = 0) -> list[InputSet]:
    """The inputs every kernel of the workload is checked on, deterministic in (workload, seed)."""
    sets = [InputSet("random", random_inputs(workload, seed))]
    if get_op(workload.op).hard_inputs is not None:
        sets.append(InputSet("hard", hard_inputs(workload, seed)))
    return sets


def reference(workload: Workload, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Expected outputs in float64."""
    return get_op(workload.op).reference(workload, inputs)


PARALLEL_MIN_ELEMENTS = 1 << 21  # below this a thread pool costs more than it saves


def expect(workload: Workload, inputs: list[np.ndarray], threads: int | None = None) -> Expected:
    """The float64 reference outputs and their per-element tolerances. Ops whose rows are independent
    (OpDef.row_split) are computed in blocks of rows on `threads` threads (default: the CPUs this process may
    run on; numpy releases the GIL), with the same result as in one piece: every row is computed alone either way."""
    op = get_op(workload.op)
    threads = threads or len(os.sched_getaffinity(0))
    rows = inputs[0].shape[0] if inputs and inputs[0].ndim else 0
    if threads > 1 and op.row_split and op.tolerance and rows > 1 and \
            sum(a.size for a in inputs) >= PARALLEL_MIN_ELEMENTS:
        return _expect_by_rows(workload, op, inputs, min(threads, rows))
    return _expect(workload, op, inputs)


def _expect_by_rows(workload: Workload, op, inputs: list[np.ndarray], blocks: int) -> Expected:
    bounds = np.linspace(0, inputs[0].shape[0], blocks + 1).astype(int)

    def block(k: int) -> Expected:
        rows = slice(bounds[k], bounds[k + 1])
        return _expect(workload, op, [a[rows] if split else a for a, split in zip(inputs, op.row_split, strict=True)])

    with ThreadPoolExecutor(blocks) as pool:
        parts = list(pool.map(block, range(blocks)))
    outputs = [np.concatenate([p.outputs[i] for p in parts]) for i in range(len(parts[0].outputs))]
    tolerance = [np.concatenate([np.broadcast_to(p.tolerance[i], p.outputs[i].shape) for p in parts])
                 for i in range(len(outputs))]
    return Expected(outputs, tolerance)


def _expect(workload: Workload, op, inputs: list[np.ndarray]) -> Expected:
    with np.errstate(all="ignore"):  # references of masked or overflowing inputs are NaN/inf on purpose
        refs = [np.asarray(r, dtype=np.float64) for r in op.reference(workload, inputs)]
        tolerances = op.tolerance(workload, inputs, refs) if op.tolerance else _fallback(workload, op, refs)
    return Expected(refs, [_settle(np.asarray(t, dtype=np.float64), r) for t, r in zip(tolerances, refs, strict=True)])


def _fallback(workload: Workload, op, refs: list[np.ndarray]) -> list[np.ndarray]:
    out = []
    for spec, ref in zip(op.output_specs(workload), refs, strict=True):
        scale = max(1.0, float(np.abs(ref[np.isfinite(ref)]).max(initial=0.0)))
        out.append(np.array([FALLBACK_TOLERANCE[spec.dtype] * scale]))
    return out


def _settle(tol: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Non-finite references are matched exactly; a NaN bound (a model fed NaN) checks strictly, not never."""
    if not np.all(np.isfinite(ref)):
        tol = np.where(np.isfinite(ref), tol, 0.0)
    return np.where(np.isnan(tol), 0.0, tol)


def verify(workload: Workload, outputs: list[np.ndarray], expected: Expected) -> VerifyResult:
    if not isinstance(expected, Expected):
        raise TypeError("verify takes expect(workload, inputs), not a list of reference arrays")
    worst = 0.0
    for k, (out, ref, tol) in enumerate(zip(outputs, expected.outputs, expected.tolerance, strict=True)):
        if out.shape != ref.shape:
            return VerifyResult(False, float("inf"), f"output {k}: shape {out.shape} != expected {ref.shape}")
        got = np.asarray(out).astype(np.float64)
        tol = np.broadcast_to(tol, ref.shape)
        with np.errstate(invalid="ignore"):
            err = np.abs(got - ref)
            same = (got == ref) | (np.isnan(got) & np.isnan(ref))
            checked = ~np.isposinf(tol)
            bad = checked & ~same & ~(err <= tol)
        finite = checked & np.isfinite(err)
        worst = max(worst, float(err[finite].max(initial=0.0)))
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            wrong = err[bad]
            worst = max(worst, float(wrong.max()) if np.isfinite(wrong).all() else float("inf"))
            return VerifyResult(False, worst,
                                f"output {k}: {int(bad.sum())} of {bad.size} elements wrong; first at {idx}: "
                                f"got {float(got[idx])!r}, expected {float(ref[idx])!r}, tol {float(tol[idx]):.3g}")
    return VerifyResult(True, worst, "ok")
