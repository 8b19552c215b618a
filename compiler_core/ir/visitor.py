"""Generic traversal: a mutator that rebuilds changed nodes, a walker, and variable substitution."""
from __future__ import annotations

import dataclasses

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S

_NODES = (E.Expr, S.Stmt)
_LEAVES = (E.IntImm, E.FloatImm, E.Var, S.Barrier)
_FIELDS: dict[type, tuple[str, ...]] = {}
_METHODS: dict[tuple[type, type], str | None] = {}  # (mutator class, node class) -> its visit_ method's name


def child_fields(cls: type) -> tuple[str, ...]:
    """The fields of a node class that may hold child nodes (none for a leaf), listed once per class: every walk
    asks for each node's, and `dataclasses.fields` builds them anew each call (most of a walk's time)."""
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = () if issubclass(cls, _LEAVES) else tuple(f.name for f in dataclasses.fields(cls))
    return names


class Mutator:
    """Rebuilds the tree bottom-up; override `visit_<NodeName>` to rewrite one node type."""

    def visit(self, node):
        if node is None:
            return None
        key = (type(self), type(node))
        name = _METHODS.get(key, False)
        if name is False:  # first node of this type for this mutator class: look its method up once
            name = "visit_" + key[1].__name__
            name = _METHODS[key] = name if hasattr(key[0], name) else None
        if name is not None:
            return getattr(self, name)(node)
        if not child_fields(key[1]):  # a leaf nothing rewrites
            return node
        return self.generic(node)

    def generic(self, node):
        changes = {}
        for name in child_fields(type(node)):
            value = getattr(node, name)
            new = self._visit_field(value)
            if new is not value:
                changes[name] = new
        if not changes:
            return node
        if isinstance(node, E.BinOp):
            a, b = changes.get("a", node.a), changes.get("b", node.b)
            return E.binop(node.op, a, b)
        return dataclasses.replace(node, **changes)

    def _visit_field(self, value):
        if isinstance(value, _NODES):
            return self.visit(value)
        if isinstance(value, tuple) and value and isinstance(value[0], _NODES):
            new = tuple(self.visit(v) for v in value)
            return value if all(a is b for a, b in zip(new, value, strict=True)) else new
        return value


def walk(node, fn) -> None:
    """Calls fn on every Expr and Stmt node, parents before children."""
    if node is None:
        return
    fn(node)
    for name in child_fields(type(node)):
        value = getattr(node, name)
        if isinstance(value, _NODES):
            walk(value, fn)
        elif isinstance(value, tuple):
            for v in value:
                if isinstance(v, _NODES):
                    walk(v, fn)


class _Substitute(Mutator):
    def __init__(self, mapping):
        self.mapping = mapping

    def visit_Var(self, node):
        return self.mapping.get(node, node)


def substitute(node, mapping: dict):
    """Replaces Var nodes (by identity) with expressions."""
    return _Substitute({k: E.as_expr(v) for k, v in mapping.items()}).visit(node)
