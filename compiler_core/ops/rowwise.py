"""Row-wise ops over the last axis of a [rows, cols] tensor: softmax, layernorm, reduce_sum, transpose."""
from __future__ import annotations

import math

import numpy as np

from compiler_core import te
from compiler_core.errors import WorkloadError
from compiler_core.ir.expr import FloatImm, call
from compiler_core.ops import error_models, hard_inputs
from compiler_core.ops.base import OpDef, dtype_param
from compiler_core.workload import Param, Workload

EPS_MIN = np.finfo(np.float32).tiny  # 1.1754944e-38: eps is checked as the float32 the kernel adds
ROWS = Param("rows", doc="independent rows")
COLS = Param("cols", doc="length of the last axis")


def _softmax(w):
    R, C = w["rows"], w["cols"]
    X = te.placeholder("X", (R, C), w.dtype)
    k1, k2 = te.reduce_axis(C, "j1"), te.reduce_axis(C, "j2")
    mx = te.compute("rowmax", (R,), lambda i: te.max_reduce(X[i, k1.var], k1))
    den = te.compute("rowsum", (R,), lambda i: te.sum_(call("exp", X[i, k2.var] - mx[i]), k2))
    Y = te.compute("Y", (R, C), lambda i, j: call("exp", X[i, j] - mx[i]) / den[i], w.dtype)
    return [X], [Y]


def _softmax_ref(w, ins):
    x = ins[0].astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return [e / e.sum(axis=-1, keepdims=True)]


def _layernorm(w):
    R, C, eps = w["rows"], w["cols"], float(w["eps"])
    X = te.placeholder("X", (R, C), w.dtype)
    G = te.placeholder("gamma", (C,), w.dtype)
    Bt = te.placeholder("beta", (C,), w.dtype)
    k1, k2 = te.reduce_axis(C, "j1"), te.reduce_axis(C, "j2")
    mean = te.compute("mean", (R,), lambda i: te.sum_(X[i, k1.var], k1) / FloatImm(float(C)))
    var = te.compute("var", (R,), lambda i: te.sum_(
        (X[i, k2.var] - mean[i]) * (X[i, k2.var] - mean[i]), k2) / FloatImm(float(C)))
    Y = te.compute("Y", (R, C), lambda i, j: (X[i, j] - mean[i]) * call("rsqrt", var[i] + FloatImm(eps))
                   * G[j] + Bt[j], w.dtype)
    return [X, G, Bt], [Y]


def _layernorm_ref(w, ins):
    x, g, b = (a.astype(np.float64) for a in ins)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return [(x - mean) / np.sqrt(var + float(w["eps"])) * g + b]


def _normalize_eps(w: Workload) -> Workload:
    """eps must survive as a float32 normal number: below float32's smallest normal it is subnormal (or 0
    in the kernel's literal), and var + eps with var = 0 gives rsqrt of 0 or of a flushed value: inf, NaN."""
    try:
        eps = float(w["eps"])
    except ValueError:
        raise WorkloadError(f"layernorm: eps must be a number, got {w['eps']!r}") from None
    if not (math.isfinite(eps) and 0 < eps <= 1 and np.float32(eps) >= EPS_MIN):
        raise WorkloadError(f"layernorm: eps must be in [1.1754944e-38, 1] (float32's smallest normal number "
                            f"to 1), got {w['eps']!r}")
    params = tuple((k, repr(eps) if k == "eps" else v) for k, v in w.params)
    return Workload(w.op, params)


def _reduce_sum(w):
    R, C = w["rows"], w["cols"]
    X = te.placeholder("X", (R, C), w.dtype)
    k = te.reduce_axis(C, "j")
    return [X], [te.compute("Y", (R,), lambda i: te.sum_(X[i, k.var], k), w.dtype)]


def _transpose(w):
    R, C = w["rows"], w["cols"]
    X = te.placeholder("X", (R, C), w.dtype)
    return [X], [te.compute("Y", (C, R), lambda j, i: X[i, j], w.dtype)]


SOFTMAX = OpDef(
    name="softmax", doc="Y = softmax(X) over the last axis of X[rows, cols]",
    params=(ROWS, COLS, dtype_param()), define=_softmax, reference=_softmax_ref,
    flops=lambda w: 5 * w["rows"] * w["cols"],
    tolerance=error_models.softmax, hard_inputs=hard_inputs.softmax, row_split=(True,),
)

LAYERNORM = OpDef(
    name="layernorm", doc="Y = (X - mean) / sqrt(var + eps) * gamma + beta over the last axis",
    params=(ROWS, COLS, Param("eps", "str", default="1e-05", doc="variance epsilon, a number in [1.1754944e-38, 1]"),
            dtype_param()),
    define=_layernorm, reference=_layernorm_ref, flops=lambda w: 8 * w["rows"] * w["cols"],
    normalize=_normalize_eps,
    tolerance=error_models.layernorm, hard_inputs=hard_inputs.layernorm, row_split=(True, False, False),
)

REDUCE_SUM = OpDef(
    name="reduce_sum", doc="Y[rows] = sum of X[rows, cols] over the last axis",
    params=(ROWS, COLS, dtype_param()), define=_reduce_sum,
    reference=lambda w, ins: [ins[0].astype(np.float64).sum(axis=-1)],
    flops=lambda w: w["rows"] * w["cols"],
    tolerance=error_models.reduce_sum, hard_inputs=hard_inputs.reduce_sum, row_split=(True,),
)

TRANSPOSE = OpDef(
    name="transpose", doc="Y[cols, rows] = X[rows, cols]^T",
    params=(ROWS, COLS, dtype_param()), define=_transpose,
    reference=lambda w, ins: [ins[0].astype(np.float64).T.copy()],
    flops=lambda w: 0,
    tolerance=error_models.exact, hard_inputs=hard_inputs.transpose,
)
