"""Vectorized loops over one row, shared by the CPU row-wise templates (softmax, layernorm, reduce_sum).

The `vector` knob picks how a row is vectorized:
- "explicit": GCC vector types. Reductions keep `accumulators` vector registers (a local float32xL
  buffer; several hide the add/max latency), merge them, then merge the L lanes; a scalar loop takes
  the `n % L` tail. Element-wise loops store L lanes at a time, then a scalar tail.
- "simd": scalar code for the host vectorizer. Reductions keep one partial per lane in a lane array of
  L * accumulators floats, updated by an `omp simd` loop over the lanes (iterations independent, so the
  pragma is legal); element-wise loops are one `omp simd` loop over the row.

A reduction is described once, as functions valid on scalars and vectors alike (`Reduction`), so the
same statistics code serves both modes, the lane merge and the tail.
"""
from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.space import Knob

EXPLICIT, SIMD = "explicit", "simd"
FLOAT_LOWEST = -3.4028234663852886e38  # -FLT_MAX: a max identity whose differences never give inf - inf


def vector_knobs() -> tuple:
    return (
        Knob("vector", (EXPLICIT, SIMD), "explicit GCC vector types, or scalar loops marked `omp simd`"),
        Knob("accumulators", (1, 2, 4), "independent vector accumulators per reduction (hide add/max latency)"),
    )


def rows_knob() -> Knob:
    # OpenMP's static schedule hands each thread one contiguous block of tasks, so this only sets the
    # granularity of the split. No constraint against the row count: a larger value means one task
    # (parallel_rows clamps), and small shapes keep enough distinct configs to sample.
    return Knob("rows_per_task", (1, 2, 4, 8, 16, 64), "rows one OpenMP iteration handles")


def lanes_for(target) -> int:
    return max(4, target.vector_lanes_f32)


@dataclass(frozen=True)
class Reduction:
    """A reduction whose state is one or more floats.

    update(rl, state, j, lanes) -> new state after the elements [j, j + lanes) (lanes 1: a scalar state);
    merge(rl, a, b) -> the state of both halves. Both may use rl.maximum / rl.exp, which work on either,
    rl.bind to name a value used more than once, and emit stores of their own (rl.b.store).
    """
    init: tuple
    update: Callable
    merge: Callable


@contextlib.contextmanager
def parallel_rows(b: IRBuilder, rows: int, per_task: int):
    """OpenMP over tasks of `per_task` rows; yields the row index `i` (guarded when rows % per_task)."""
    per_task = min(per_task, rows)
    with contextlib.ExitStack() as scope:
        rt = scope.enter_context(b.loop("rt", E.ceil_div(rows, per_task), S.ForKind.PARALLEL))
        ri = scope.enter_context(b.loop("ri", per_task))
        i = scope.enter_context(b.let("i", rt * per_task + ri))
        if rows % per_task:
            scope.enter_context(b.if_(i < rows))
        yield i


class RowLoops:
    """Emits reductions and element-wise loops over a contiguous run of one row."""

    def __init__(self, b: IRBuilder, mode: str, lanes: int, accumulators: int) -> None:
        self.b, self.mode, self.lanes, self.accumulators = b, mode, lanes, accumulators
        self._ids = itertools.count()
        self._scope: contextlib.ExitStack | None = None

    def name(self, base: str) -> str:
        return f"{base}{next(self._ids)}"

    # ---- math valid on scalars and vectors -----------------------------------------------
    @staticmethod
    def maximum(a: E.Expr, b: E.Expr) -> E.Expr:
        if E.lanes_of(a.dtype) > 1:
            return E.max_(a, b)
        return E.select(b > a, b, a)  # renders as a compare, which GCC vectorizes (fmaxf is a call)

    @staticmethod
    def exp(x: E.Expr) -> E.Expr:
        return E.call("exp", x, dtype=x.dtype)

    @staticmethod
    def splat(x, lanes: int) -> E.Expr:
        x = E.as_expr(x)
        return E.Broadcast(x, lanes) if lanes > 1 else x

    @staticmethod
    def load(buf: S.Buffer, indices: tuple, lanes: int) -> E.Expr:
        return E.Load(buf, tuple(E.as_expr(i) for i in indices), lanes)

    # ---- state updates ---------------------------------------------------------------------
    def bind(self, value: E.Expr) -> E.Var:
        """Names a value (a C `const` local) until the state update being built is stored."""
        assert self._scope is not None, "bind is for Reduction.update / merge"
        return self._scope.enter_context(self.b.let(self.name("t"), value, value.dtype))

    def update_state(self, targets: list, fn: Callable, *args) -> None:
        """Stores fn(self, *args) (new state values) into (buffer, index) targets."""
        with contextlib.ExitStack() as scope:
            outer, self._scope = self._scope, scope
            try:
                values = fn(self, *args)
            finally:
                self._scope = outer
            self.assign(targets, values)

    def assign(self, targets: list, values: list) -> None:
        """Stores values into (buffer, index) targets; all values are computed before any store."""
        b = self.b
        if len(values) == 1:
            b.store(targets[0][0], targets[0][1], values[0])
            return
        with contextlib.ExitStack() as scope:
            temps = [scope.enter_context(b.let(self.name("t"), v, v.dtype)) for v in values]
            for (buf, idx), t in zip(targets, temps, strict=True):
                b.store(buf, idx, t)

    # ---- reductions ------------------------------------------------------------------------
    @contextlib.contextmanager
    def reduce(self, red: Reduction, n: int, start=0):
        """Reduces elements [start, start + n) of a row; yields the final state (scalar loads)."""
        b = self.b
        with contextlib.ExitStack() as scope:
            result = [scope.enter_context(b.allocate(self.name("r"), "float32", (1,), S.Scope.LOCAL))
                      for _ in red.init]
            done = 0
            if self.mode == EXPLICIT and n >= self.lanes:
                done = self._reduce_explicit(red, n, start, result)
            elif self.mode == SIMD and n >= self.lanes * self.accumulators:
                done = self._reduce_simd(red, n, start, result)
            else:
                for r, init in zip(result, red.init, strict=True):
                    b.store(r, 0, E.FloatImm(init))
            if n > done:
                with b.loop(self.name("jt"), n - done) as jt:
                    state = [r[0] for r in result]
                    self.update_state([(r, 0) for r in result], red.update, state, start + done + jt, 1)
            yield [r[0] for r in result]

    def _reduce_explicit(self, red: Reduction, n: int, start, result: list) -> int:
        b, lanes = self.b, self.lanes
        block = lanes * self.accumulators
        blocks = n // block
        accs = self.accumulators if blocks else 1
        vdtype = E.with_lanes("float32", lanes)
        with contextlib.ExitStack() as scope:
            vec = [scope.enter_context(b.allocate(self.name("acc"), vdtype, (accs,), S.Scope.LOCAL))
                   for _ in red.init]
            with b.loop(self.name("a"), accs, S.ForKind.UNROLLED) as a:
                for v, init in zip(vec, red.init, strict=True):
                    b.store(v, a, self.splat(E.FloatImm(init), lanes))
            if blocks:
                with b.loop(self.name("jb"), blocks) as jb:
                    with b.loop(self.name("a"), accs, S.ForKind.UNROLLED) as a:
                        self._update_at(red, vec, a, start + jb * block + a * lanes, lanes)
            rest = (n - blocks * block) // lanes
            if rest:
                with b.loop(self.name("jv"), rest) as jv:
                    self._update_at(red, vec, 0, start + blocks * block + jv * lanes, lanes)
            for k in range(1, accs):
                self.update_state([(v, 0) for v in vec], red.merge, [v[0] for v in vec], [v[k] for v in vec])
            spill = [scope.enter_context(b.allocate(self.name("lane"), "float32", (lanes,), S.Scope.LOCAL))
                     for _ in red.init]
            for s, v in zip(spill, vec, strict=True):
                b.store(s, 0, v[0], lanes)
            self._merge_lanes(red, spill, lanes, result)
        return (n // lanes) * lanes

    def _reduce_simd(self, red: Reduction, n: int, start, result: list) -> int:
        b = self.b
        width = self.lanes * self.accumulators
        with contextlib.ExitStack() as scope:
            part = [scope.enter_context(b.allocate(self.name("part"), "float32", (width,), S.Scope.LOCAL))
                    for _ in red.init]
            with b.loop(self.name("l"), width, S.ForKind.VECTORIZED) as lane:
                for p, init in zip(part, red.init, strict=True):
                    b.store(p, lane, E.FloatImm(init))
            with b.loop(self.name("jb"), n // width) as jb:
                with b.loop(self.name("l"), width, S.ForKind.VECTORIZED) as lane:
                    self._update_at(red, part, lane, start + jb * width + lane, 1)
            self._merge_lanes(red, part, width, result)
        return (n // width) * width

    def _update_at(self, red: Reduction, bufs: list, slot, j, lanes: int) -> None:
        state = [buf[slot] for buf in bufs]
        self.update_state([(buf, slot) for buf in bufs], red.update, state, j, lanes)

    def _merge_lanes(self, red: Reduction, parts: list, width: int, result: list) -> None:
        b = self.b
        for r, p in zip(result, parts, strict=True):
            b.store(r, 0, p[0])
        with b.loop(self.name("l"), width - 1) as lane:
            self.update_state([(r, 0) for r in result], red.merge, [r[0] for r in result],
                              [p[lane + 1] for p in parts])

    # ---- element-wise ------------------------------------------------------------------------
    def map(self, n: int, emit: Callable, start=0) -> None:
        """Calls emit(j, lanes) to produce the stores for elements [j, j + lanes) of [start, start + n)."""
        b = self.b
        if self.mode == SIMD:
            with b.loop(self.name("j"), n, S.ForKind.VECTORIZED) as j:
                emit(start + j, 1)
            return
        vectors = n // self.lanes
        if vectors:
            with b.loop(self.name("jv"), vectors) as jv:
                emit(start + jv * self.lanes, self.lanes)
        if n % self.lanes:
            with b.loop(self.name("jt"), n % self.lanes) as jt:
                emit(start + vectors * self.lanes + jt, 1)
