"""Pass: multi-dimensional buffer indices become one linear index using (padded) strides."""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.visitor import Mutator


def linear_index(buffer: S.Buffer, indices: tuple) -> tuple:
    if len(indices) <= 1:
        return indices
    if len(indices) != len(buffer.shape):
        raise ValueError(f"buffer {buffer.name} has rank {len(buffer.shape)}, indexed with {len(indices)}")
    flat: E.Expr = E.IntImm(0)
    for idx, stride in zip(indices, buffer.strides, strict=True):
        flat = flat + idx * stride
    return (flat,)


class _Flatten(Mutator):
    def visit_Load(self, node: E.Load):
        return E.Load(node.buffer, linear_index(node.buffer, tuple(self.visit(i) for i in node.indices)), node.lanes)

    def visit_Address(self, node: E.Address):
        return E.Address(node.buffer, linear_index(node.buffer, tuple(self.visit(i) for i in node.indices)))

    def visit_Store(self, node: S.Store):
        indices = linear_index(node.buffer, tuple(self.visit(i) for i in node.indices))
        return S.Store(node.buffer, indices, self.visit(node.value), node.lanes)


def flatten_buffers(module: S.Module, target) -> S.Module:
    return module.map_funcs(lambda f: f.with_body(_Flatten().visit(f.body)))
