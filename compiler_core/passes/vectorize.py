"""Pass: on CUDA, a vectorized loop that copies contiguous elements becomes one 32/64/128-bit move.

Anything else marked vectorized is unrolled instead (always correct). On C the loop stays and is
rendered with `#pragma omp simd` for the host compiler's vectorizer.
"""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.visitor import Mutator, substitute

VECTOR_BYTES = (4, 8, 16)


def affine_coefficient(e: E.Expr, var: E.Var):
    """Coefficient of `var` if `e` is affine in it (integer arithmetic), else None."""
    if e is var:
        return 1
    if isinstance(e, (E.IntImm, E.Var)):
        return 0
    if isinstance(e, E.BinOp) and e.op in ("+", "-"):
        a, b = affine_coefficient(e.a, var), affine_coefficient(e.b, var)
        if a is None or b is None:
            return None
        return a + b if e.op == "+" else a - b
    if isinstance(e, E.BinOp) and e.op == "*":
        a, b = affine_coefficient(e.a, var), affine_coefficient(e.b, var)
        if a is None or b is None:
            return None
        if a == 0 and b == 0:
            return 0
        if a == 0 and isinstance(e.a, E.IntImm):
            return e.a.value * b
        if b == 0 and isinstance(e.b, E.IntImm):
            return e.b.value * a
        return None
    from compiler_core.ir.visitor import walk

    uses = []
    walk(e, lambda n: uses.append(n) if n is var else None)
    return 0 if not uses else None


class _Vectorize(Mutator):
    def visit_For(self, node: S.For):
        body = self.visit(node.body)
        if node.kind is not S.ForKind.VECTORIZED:
            return S.For(node.var, node.extent, node.kind, body, node.min)
        vectorized = _as_vector_copy(node.var, node.extent, body)
        return vectorized or S.For(node.var, node.extent, S.ForKind.UNROLLED, body, node.min)


def _as_vector_copy(var: E.Var, extent: E.Expr, body: S.Stmt):
    if not (isinstance(extent, E.IntImm) and isinstance(body, S.Store) and isinstance(body.value, E.Load)):
        return None
    lanes, load = extent.value, body.value
    nbytes = lanes * S.dtype_bytes(body.buffer.dtype)
    if nbytes not in VECTOR_BYTES or load.buffer.dtype != body.buffer.dtype or body.lanes != 1 or load.lanes != 1:
        return None
    if affine_coefficient(body.indices[0], var) != 1 or affine_coefficient(load.indices[0], var) != 1:
        return None
    zero = {var: E.IntImm(0)}
    src = E.Load(load.buffer, (substitute(load.indices[0], zero),), lanes)
    return S.Store(body.buffer, (substitute(body.indices[0], zero),), src, lanes)


def vectorize(module: S.Module, target) -> S.Module:
    return module.map_funcs(lambda f: f.with_body(_Vectorize().visit(f.body)))
