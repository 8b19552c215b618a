"""elementwise: Y[rows, cols] = f(inputs) for a parsed expression; `vectors` names 1-D inputs broadcast along cols."""
from __future__ import annotations

import numpy as np

from compiler_core import te
from compiler_core.errors import WorkloadError
from compiler_core.ir.expr import cast
from compiler_core.ops import expr_error, expr_parser, hard_inputs
from compiler_core.ops.base import OpDef, dtype_param
from compiler_core.workload import Param, Workload


def vector_names(w: Workload) -> list[str]:
    return [v for v in w["vectors"].split(",") if v]


def _define(w):
    tree = expr_parser.parse(w["expr"])
    R, C, vectors = w["rows"], w["cols"], set(vector_names(w))
    inputs = {n: te.placeholder(n, (C,) if n in vectors else (R, C), w.dtype) for n in expr_parser.input_names(tree)}

    def body(i, j):
        env = {n: cast("float32", t[j] if n in vectors else t[i, j]) for n, t in inputs.items()}
        return cast(w.dtype, expr_parser.to_ir(tree, env))

    return list(inputs.values()), [te.compute("Y", (R, C), body, w.dtype)]


def _reference(w, ins):
    tree = expr_parser.parse(w["expr"])
    env = {n: a.astype(np.float64) for n, a in zip(expr_parser.input_names(tree), ins, strict=True)}
    out = np.broadcast_to(expr_parser.to_numpy(tree, env), (w["rows"], w["cols"]))
    return [np.array(out, dtype=np.float64)]


def _tolerance(w, ins, refs):
    """The running error bound of the expression (expr_error), then the rounding to the output dtype (of a
    subnormal result: up to half its spacing)."""
    from compiler_core.ops.error_models import output_floor, output_rounding, storable

    tree = expr_parser.parse(w["expr"])
    env = {n: a.astype(np.float64) for n, a in zip(expr_parser.input_names(tree), ins, strict=True)}
    _, error = expr_error.bound(tree, env)
    error = np.broadcast_to(error, (w["rows"], w["cols"]))
    return [storable(error + output_rounding(refs[0], w.dtype) + output_floor(w.dtype), refs[0], w.dtype)]


def _normalize(w: Workload) -> Workload:
    tree = expr_parser.parse(w["expr"])
    names = expr_parser.input_names(tree)
    vectors = sorted({v.strip() for v in w["vectors"].split(",") if v.strip()})
    unknown = [v for v in vectors if v not in names]
    if unknown:
        raise WorkloadError(f"elementwise: vectors {', '.join(unknown)} not inputs of the expression "
                            f"(inputs: {', '.join(names)})")
    if len(vectors) == len(names):
        raise WorkloadError("elementwise: at least one input must be a full [rows, cols] tensor")
    canon = {"expr": expr_parser.render(tree), "vectors": ",".join(vectors)}
    return Workload(w.op, tuple((k, canon.get(k, v)) for k, v in w.params))


def _flops(w) -> int:
    tree = expr_parser.parse(w["expr"])
    count = [0]

    def visit(n):
        count[0] += not isinstance(n, (expr_parser.Name, expr_parser.Num))
        for c in expr_parser._children(n):
            visit(c)

    visit(tree)
    return count[0] * w["rows"] * w["cols"]


ELEMENTWISE = OpDef(
    name="elementwise",
    doc="Y = expr(inputs) elementwise, e.g. gelu(x*w+b); functions: "
        + ", ".join(expr_parser.UNARY_FUNCS + expr_parser.BINARY_FUNCS),
    params=(Param("rows"), Param("cols"),
            Param("expr", "str", doc="expression over named inputs, e.g. 'relu(a+b)*c'"),
            Param("vectors", "str", default="", doc="comma-separated 1-D inputs of length cols"),
            dtype_param()),
    define=_define, reference=_reference, flops=_flops, normalize=_normalize,
    tolerance=_tolerance, hard_inputs=hard_inputs.elementwise,
)
