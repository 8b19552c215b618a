"""A small imperative builder so schedule templates read like the loop nests they produce."""
from __future__ import annotations

import contextlib
import itertools

from compiler_core.ir.expr import FLOAT_TYPES, Cast, Expr, Var, as_expr, cast, lanes_of, scalar_of, with_lanes
from compiler_core.ir.stmt import (
    Allocate,
    Barrier,
    Buffer,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    Scope,
    Seq,
    Stmt,
    Store,
)


def seq(stmts) -> Stmt:
    flat = []
    for s in stmts:
        if isinstance(s, Seq):
            flat.extend(s.stmts)
        elif s is not None:
            flat.append(s)
    return flat[0] if len(flat) == 1 else Seq(tuple(flat))


def _converted(value: Expr, dtype: str) -> Expr:
    """`value` in the scalar float type of `dtype` (lanes kept) when both are float types and differ: the one
    place a half value is narrowed from float32 or widened into a float32 slot."""
    have, want = scalar_of(value.dtype), scalar_of(dtype)
    if (have == "float32" and want in ("float16", "bfloat16") and isinstance(value, Cast)
            and value.value.dtype == with_lanes(want, lanes_of(value.dtype))):
        return value.value  # a half value widened and stored back into its own type: exact, the bits as they were
    if have != want and have in FLOAT_TYPES and want in FLOAT_TYPES:
        return cast(with_lanes(want, lanes_of(value.dtype)), value)
    return value


class IRBuilder:
    """Collects statements; `with` blocks open loops, conditions and allocations."""

    def __init__(self) -> None:
        self._stack: list[list[Stmt]] = [[]]
        self._names = itertools.count()

    def emit(self, stmt: Stmt) -> None:
        self._stack[-1].append(stmt)

    def fresh(self, name: str) -> str:
        return f"{name}{next(self._names)}" if name[-1].isdigit() else name

    @contextlib.contextmanager
    def loop(self, name: str | Var, extent, kind: ForKind = ForKind.SERIAL):
        """Opens a loop; pass an existing Var (e.g. a tensor expression's reduce axis) to bind that variable."""
        var = name if isinstance(name, Var) else Var(name)
        self._stack.append([])
        yield var
        body = seq(self._stack.pop())
        self.emit(For(var, as_expr(extent), kind, body))

    @contextlib.contextmanager
    def if_(self, cond):
        self._stack.append([])
        yield
        body = seq(self._stack.pop())
        self.emit(IfThenElse(as_expr(cond), body))

    @contextlib.contextmanager
    def if_else(self, cond, then_share: float | None = None):
        """Yields a callable that switches to the else branch:
        `with b.if_else(c) as otherwise: ...; otherwise(); ...`; `then_share`: see IfThenElse."""
        branches: list[list[Stmt]] = [[]]
        self._stack.append(branches[0])

        def otherwise() -> None:
            branches.append([])
            self._stack[-1] = branches[1]

        yield otherwise
        self._stack.pop()
        else_ = seq(branches[1]) if len(branches) > 1 else None
        self.emit(IfThenElse(as_expr(cond), seq(branches[0]), else_, then_share))

    @contextlib.contextmanager
    def allocate(self, name: str, dtype: str, shape, scope: Scope, pad: int = 0, align: int = 16):
        buf = Buffer(name, dtype, tuple(shape), scope, pad, align)
        self._stack.append([])
        yield buf
        body = seq(self._stack.pop())
        self.emit(Allocate(buf, body))

    @contextlib.contextmanager
    def let(self, name: str, value, dtype: str = "int32"):
        """A named value of `dtype`; a float value of another float type is converted (as store converts)."""
        var = Var(name, dtype)
        value = _converted(as_expr(value), dtype)
        self._stack.append([])
        yield var
        body = seq(self._stack.pop())
        self.emit(LetStmt(var, as_expr(value), body))

    def store(self, buffer: Buffer, indices, value, lanes: int = 1) -> None:
        """buffer[indices] = value; a float value of another float type is converted to the buffer's (a float32
        result narrowed once into a half buffer, a half load widened into a float32 one)."""
        indices = indices if isinstance(indices, tuple) else (indices,)
        value = _converted(as_expr(value, buffer.dtype), buffer.dtype)
        self.emit(Store(buffer, tuple(as_expr(i) for i in indices), value, lanes))

    def barrier(self) -> None:
        self.emit(Barrier())

    def evaluate(self, call: Expr) -> None:
        self.emit(Evaluate(call))

    def get(self) -> Stmt:
        assert len(self._stack) == 1, "unclosed builder block"
        return seq(self._stack[0])
