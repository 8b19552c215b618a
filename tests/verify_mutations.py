"""Planted faults for the mutation suites (tests/cpu and tests/gpu): workloads on odd shapes, and wrong outputs
made from correct ones. Each fault is what a plausible kernel bug would return; verify must catch every one
on at least one of the workload's input sets, and let the correct output through on all of them."""
from __future__ import annotations

import numpy as np

from compiler_core import get_op, make_workload
from compiler_core.dtypes import numpy_dtype

CASES = {
    "matmul_f32": ("matmul", dict(M=67, N=131, K=45)),
    "matmul_f16": ("matmul", dict(M=67, N=131, K=45, dtype="float16")),
    "batch_matmul": ("batch_matmul", dict(batch=3, M=17, N=33, K=45)),
    "conv2d": ("conv2d", dict(N=2, C=3, H=9, W=11, K=5, R=3, S=3, stride=2, pad=1)),
    "softmax": ("softmax", dict(rows=7, cols=1003)),
    "softmax_long": ("softmax", dict(rows=7, cols=100003)),
    "layernorm": ("layernorm", dict(rows=7, cols=1003)),
    "reduce_sum": ("reduce_sum", dict(rows=7, cols=1003)),
    "reduce_sum_long": ("reduce_sum", dict(rows=7, cols=100003)),
    "transpose": ("transpose", dict(rows=67, cols=131)),
    "elementwise": ("elementwise", dict(rows=7, cols=1003, expr="gelu(x*w+b)", vectors="w,b")),
    "attention": ("attention", dict(heads=3, seq_q=17, seq_kv=45, head_dim=24)),
    "attention_causal": ("attention", dict(heads=2, seq_q=45, seq_kv=17, head_dim=24, causal=1)),
}
# The half dtypes (float32 math, half storage) on the same shapes, the long rows left out.
HALF = {"float16": "f16", "bfloat16": "bf16"}
CASES.update({f"{case.removesuffix('_f32')}_{short}": (op, dict(params, dtype=dtype))
              for case, (op, params) in list(CASES.items())
              if "dtype" not in params and not case.endswith("_long")
              for dtype, short in HALF.items()})
SEED = 5


def workload(case: str):
    op, params = CASES[case]
    return make_workload(op, params)


def _cast(w, y: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return y.astype(numpy_dtype(w.dtype))


def zeros(w, inputs, out):
    return np.zeros_like(out)


SCALE_ERROR = {"float32": 1e-3, "float16": 1e-2, "bfloat16": 3e-2}  # well above each dtype's u (6e-8, 5e-4, 4e-3)


def scaled(w, inputs, out):
    """A slightly wrong constant (a scale folded in wrong), relative SCALE_ERROR of the dtype."""
    return _cast(w, out.astype(np.float64) * (1 + SCALE_ERROR[w.dtype]))


def row_duplicated(w, inputs, out):
    """Row 1 (channel 1 of a conv, element 1 of a 1-D output) overwritten with row 0."""
    y = out.copy()
    axis = 1 if w.op == "conv2d" else max(out.ndim - 2, 0)
    index = [slice(None)] * out.ndim
    index[axis] = 0
    source = y[tuple(index)].copy()
    index[axis] = 1
    y[tuple(index)] = source
    return y


def nan_on_constant_rows(w, inputs, out):
    """NaN on the rows whose input is constant (0 * inf of a flushed rsqrt); row 0 where no row is constant."""
    y = out.copy()
    x = inputs[0]
    rows = [0]
    if w.op in ("softmax", "layernorm", "reduce_sum") and x.ndim == 2:
        rows = [i for i in range(x.shape[0]) if np.all(x[i] == x[i, 0])] or [0]
    y[rows] = np.nan
    return y


def dropped_term(w, inputs, out):
    """The reduction misses its last term: k = K-1 (GEMM), the last (c, r, s) tap (conv), the last column
    (reduce_sum, the softmax denominator, the layernorm mean), the last key (attention); transpose and
    elementwise: the last element left unwritten (0)."""
    x = [a.astype(np.float64) for a in inputs]
    with np.errstate(all="ignore"):
        if w.op in ("matmul", "batch_matmul"):
            return _cast(w, out.astype(np.float64) - x[0][..., -1:] * x[1][..., -1:, :])
        if w.op == "conv2d":
            tap = np.zeros_like(x[1])
            tap[:, -1, -1, -1] = x[1][:, -1, -1, -1]
            return _cast(w, out.astype(np.float64) - get_op("conv2d").reference(w, [x[0], tap])[0])
        if w.op == "reduce_sum":
            return _cast(w, out.astype(np.float64) - x[0][:, -1])
        if w.op == "softmax":
            e = np.exp(x[0] - x[0].max(axis=-1, keepdims=True))
            return _cast(w, e / (e.sum(axis=-1, keepdims=True) - e[:, -1:]))
        if w.op == "attention" and w["seq_kv"] > 1:
            shorter = make_workload("attention", dict(w.param_dict, seq_kv=w["seq_kv"] - 1))
            return _cast(w, get_op("attention").reference(shorter, [x[0], x[1][:, :-1], x[2][:, :-1]])[0])
        if w.op == "layernorm":
            mean = (x[0].sum(axis=-1, keepdims=True) - x[0][:, -1:]) / x[0].shape[-1]
            d = x[0] - mean
            return _cast(w, d / np.sqrt((d * d).mean(axis=-1, keepdims=True) + float(w["eps"])) * x[1] + x[2])
    y = out.copy()
    y.reshape(-1)[-1] = 0
    return y


FAULTS = {f.__name__: f for f in (zeros, scaled, row_duplicated, nan_on_constant_rows, dropped_term)}
