"""Running error analysis of an elementwise expression: per element, a float64 bound on how far a correct
float32 evaluation of the parsed tree (as to_ir renders it) can be from the float64 reference.

Each node carries (value, error): error bounds |float32 result - exact value| to first order. Inputs are
exact (float16/float32 widen to float32 exactly); every float32 operation adds one rounding, u |result|;
a function adds |f'(x)| * error(x) plus its own accuracy. A node whose exact value leaves float32's range
gets an infinite error: float32 overflows there, so the element cannot be checked.
"""
from __future__ import annotations

import math

import numpy as np

from compiler_core.numerics import ACCUMULATION_DTYPE, rounding
from compiler_core.ops import expr_parser as P

U = rounding(ACCUMULATION_DTYPE).u
MAX = rounding(ACCUMULATION_DTYPE).max
TINY = rounding(ACCUMULATION_DTYPE).tiny
# Library accuracy of each function in units of u (1 ulp = 2u): CUDA's documented maxima (expf, tanhf,
# erff, rsqrtf 2 ulp; logf 1 ulp) bound glibc's and our vector exp (~1 ulp); sqrt is correctly rounded.
FUNC_ERROR_U = {"exp": 4, "log": 2, "tanh": 4, "erf": 4, "sqrt": 1}
# First-order propagation drops error*error terms, and FMA contraction (-ffp-contract=fast, and CUDA's
# default) rounds a*b+c once instead of twice: a factor 2 on the bound covers both.
MARGIN = 2.0


def bound(tree, env: dict) -> tuple[np.ndarray, np.ndarray]:
    """(value, error bound) of the tree over float64 input arrays in env."""
    with np.errstate(all="ignore"):
        value, error = _node(tree, env)
        error = np.where(np.abs(value) > MAX, np.inf, MARGIN * error)
    return value, error


def _rounded(value, error):
    """One float32 rounding of the result (of a subnormal result: up to u * tiny); overflow beyond
    float32's range is unboundable."""
    error = error + U * (np.abs(value) + TINY)
    return value, np.where(np.abs(value) > MAX, np.inf, error)


def _node(n, env):
    if isinstance(n, P.Num):
        return _rounded(np.float64(n.value), np.float64(0.0))
    if isinstance(n, P.Name):
        return env[n.id], np.zeros_like(env[n.id])
    if isinstance(n, P.Neg):
        v, e = _node(n.x, env)
        return -v, e
    if isinstance(n, P.Bin):
        return _binary(n.op, _node(n.a, env), _node(n.b, env))
    return _function(n.name, [_node(a, env) for a in n.args])


def _binary(op: str, a, b):
    (va, ea), (vb, eb) = a, b
    if op in ("+", "-"):
        return _rounded(va + vb if op == "+" else va - vb, ea + eb)
    if op == "*":
        return _rounded(va * vb, np.abs(va) * eb + np.abs(vb) * ea + ea * eb)
    if op == "/":
        v = va / vb
        margin = np.abs(vb) - eb  # the divisor may be this small; <= 0: it may be 0
        e = np.where(margin > 0, (ea + np.abs(v) * eb) / margin, np.inf)
        return _rounded(v, e)
    # max / min: exact selection; the error of whichever side wins
    return (np.maximum(va, vb) if op == "max" else np.minimum(va, vb)), np.maximum(ea, eb)


def _function(name: str, args):
    (x, e), = args[:1]
    if name in ("max", "min"):
        return _binary(name, args[0], args[1])
    if name == "relu":
        return np.maximum(x, 0.0), e
    if name == "abs":
        return np.abs(x), e
    if name == "silu":  # x * sigmoid(x)
        return _binary("*", (x, e), _function("sigmoid", [(x, e)]))
    if name == "sigmoid":  # 1 / (1 + exp(-x))
        return _binary("/", (np.float64(1.0), np.float64(0.0)), _binary("+", (np.float64(1.0), np.float64(0.0)),
                                                                        _function("exp", [(-x, e)])))
    if name == "rsqrt":  # 1 / sqrt(x)
        return _binary("/", (np.float64(1.0), np.float64(0.0)), _function("sqrt", [(x, e)]))
    if name == "gelu":  # 0.5 * x * (1 + erf(x * (1/sqrt 2)))
        inner = _binary("*", (x, e), _rounded(np.float64(1 / math.sqrt(2)), np.float64(0.0)))
        one_plus = _binary("+", (np.float64(1.0), np.float64(0.0)), _function("erf", [inner]))
        return _binary("*", _binary("*", (np.float64(0.5), np.float64(0.0)), (x, e)), one_plus)
    value, slope = _value_and_slope(name, x, e)
    return _rounded_by(value, np.where(e == 0, 0.0, slope * e), FUNC_ERROR_U[name])


def _value_and_slope(name: str, x, e):
    """f(x) and a bound on |f'| over [x - e, x + e]."""
    if name == "exp":
        return np.exp(x), np.exp(x + e)
    if name == "log":
        return np.log(x), np.where(x - e > 0, 1 / (x - e), np.inf)
    if name == "sqrt":
        return np.sqrt(x), np.where(x - e > 0, 0.5 / np.sqrt(np.maximum(x - e, 0)), np.inf)
    if name == "tanh":
        return np.tanh(x), np.ones_like(x)  # |tanh'| <= 1
    return P.erf(x), np.full_like(x, 2 / math.sqrt(math.pi))  # erf: |erf'| <= 2/sqrt(pi)


def _rounded_by(value, error, units: int):
    error = error + units * U * np.abs(value) + TINY  # a result below tiny may flush to 0
    return value, np.where(np.abs(value) > MAX, np.inf, error)
