"""Generic traversal: a mutator that rebuilds changed nodes, a walker, and variable substitution."""
from __future__ import annotations

import dataclasses

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S


class Mutator:
    """Rebuilds the tree bottom-up; override `visit_<NodeName>` to rewrite one node type."""

    def visit(self, node):
        if node is None:
            return None
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is not None:
            return method(node)
        return self.generic(node)

    def generic(self, node):
        if isinstance(node, (E.IntImm, E.FloatImm, E.Var, S.Barrier)):
            return node
        changes = {}
        for f in dataclasses.fields(node):
            value = getattr(node, f.name)
            new = self._visit_field(value)
            if new is not value:
                changes[f.name] = new
        if not changes:
            return node
        if isinstance(node, E.BinOp):
            a, b = changes.get("a", node.a), changes.get("b", node.b)
            return E.binop(node.op, a, b)
        return dataclasses.replace(node, **changes)

    def _visit_field(self, value):
        if isinstance(value, (E.Expr, S.Stmt)):
            return self.visit(value)
        if isinstance(value, tuple) and value and isinstance(value[0], (E.Expr, S.Stmt)):
            new = tuple(self.visit(v) for v in value)
            return value if all(a is b for a, b in zip(new, value, strict=True)) else new
        return value


def walk(node, fn) -> None:
    """Calls fn on every Expr and Stmt node, parents before children."""
    if node is None:
        return
    fn(node)
    if isinstance(node, (E.IntImm, E.FloatImm, E.Var, S.Barrier)):
        return
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        if isinstance(value, (E.Expr, S.Stmt)):
            walk(value, fn)
        elif isinstance(value, tuple):
            for v in value:
                if isinstance(v, (E.Expr, S.Stmt)):
                    walk(v, fn)


class _Substitute(Mutator):
    def __init__(self, mapping):
        self.mapping = mapping

    def visit_Var(self, node):
        return self.mapping.get(node, node)


def substitute(node, mapping: dict):
    """Replaces Var nodes (by identity) with expressions."""
    return _Substitute({k: E.as_expr(v) for k, v in mapping.items()}).visit(node)
