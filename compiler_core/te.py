"""Tensor expressions: placeholders and `compute` stages with reduce axes; no schedule appears here."""
from __future__ import annotations

from dataclasses import dataclass, field

from compiler_core.ir.expr import Expr, Var, as_expr


@dataclass(eq=False)
class Tensor:
    name: str
    shape: tuple
    dtype: str

    def __getitem__(self, idx) -> Expr:
        idx = idx if isinstance(idx, tuple) else (idx,)
        if len(idx) != len(self.shape):
            raise IndexError(f"{self.name} has rank {len(self.shape)}, indexed with {len(idx)}")
        return TensorRead(self, tuple(as_expr(i) for i in idx))

    __hash__ = object.__hash__


@dataclass(eq=False)
class Placeholder(Tensor):
    """An input tensor."""


@dataclass(eq=False)
class ComputeTensor(Tensor):
    """out[axes] = body, where body may be a Reduce over reduce axes."""
    axes: tuple = ()
    body: Expr | None = None


@dataclass(eq=False)
class ReduceAxis:
    var: Var
    extent: int


@dataclass(eq=False)
class TensorRead(Expr):
    tensor: Tensor
    indices: tuple

    @property
    def dtype(self) -> str:
        return self.tensor.dtype


@dataclass(eq=False)
class Reduce(Expr):
    combiner: str  # "sum" or "max"
    body: Expr
    axes: tuple
    dtype: str = field(default="float32")


REDUCE_IDENTITY = {"sum": 0.0, "max": float("-inf")}


def placeholder(name: str, shape, dtype: str) -> Placeholder:
    return Placeholder(name, tuple(int(s) for s in shape), dtype)


def reduce_axis(extent: int, name: str) -> ReduceAxis:
    return ReduceAxis(Var(name), int(extent))


def compute(name: str, shape, fn, dtype: str = "float32") -> ComputeTensor:
    axes = tuple(Var(f"{name}_i{k}") for k in range(len(shape)))
    return ComputeTensor(name, tuple(int(s) for s in shape), dtype, axes, as_expr(fn(*axes)))


def sum_(body: Expr, axes) -> Reduce:
    axes = tuple(axes) if isinstance(axes, (list, tuple)) else (axes,)
    return Reduce("sum", as_expr(body), axes, "float32")


def max_reduce(body: Expr, axes) -> Reduce:
    axes = tuple(axes) if isinstance(axes, (list, tuple)) else (axes,)
    return Reduce("max", as_expr(body), axes, "float32")


def stages(outputs) -> list[ComputeTensor]:
    """All compute stages feeding `outputs`, producers first."""
    from compiler_core.ir.visitor import walk

    order: list[ComputeTensor] = []

    def visit_tensor(t: Tensor) -> None:
        if not isinstance(t, ComputeTensor) or t in order:
            return
        reads: list[Tensor] = []
        walk(t.body, lambda n: reads.append(n.tensor) if isinstance(n, TensorRead) else None)
        for r in reads:
            visit_tensor(r)
        order.append(t)

    for out in outputs:
        visit_tensor(out)
    return order
