"""A test double for a CUDA device: runs a PrimFunc's IR in numpy, block after block, every thread of a block as
one lane of a vector (the whole block executes each statement before the next, so a barrier holds by
construction). Enough of the IR for copy kernels: integer index arithmetic, loads, masked stores, lets, shared
allocations, serial and thread loops, branches. It checks a kernel's index arithmetic on CPU; the gpu tier checks
the kernel itself."""
from __future__ import annotations

import numpy as np

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S

_OPS = {"+": np.add, "-": np.subtract, "*": np.multiply, "//": np.floor_divide, "%": np.mod,
        "min": np.minimum, "max": np.maximum, "<": np.less, "<=": np.less_equal, "==": np.equal,
        "!=": np.not_equal, "&&": np.logical_and, "||": np.logical_or}
_BLOCKS = (S.ForKind.BLOCK_X, S.ForKind.BLOCK_Y, S.ForKind.BLOCK_Z)


def run_blocks(func: S.PrimFunc, inputs: dict, outputs: dict) -> dict:
    """`inputs`: {buffer name: flat array}; `outputs`: {buffer name: element count}. Returns the outputs, NaN
    where the kernel wrote nothing."""
    arrays = {name: np.asarray(a, dtype=np.float64).ravel() for name, a in inputs.items()}
    arrays.update({name: np.full(n, np.nan) for name, n in outputs.items()})
    threads = _thread_loops(func.body)
    extents = [int(loop.extent.value) for loop in threads]
    mesh = np.meshgrid(*(np.arange(n) for n in extents), indexing="ij") if threads else []
    lanes = {loop.var: m.ravel() for loop, m in zip(threads, mesh, strict=True)}
    width = int(np.prod(extents)) if threads else 1
    _Run(arrays, lanes, width).stmt(func.body, {}, np.ones(width, dtype=bool))
    return {name: arrays[name] for name in outputs}


def _thread_loops(stmt) -> list:
    found = []
    for child in _children(stmt):
        if isinstance(child, S.For) and child.kind.is_thread_binding and child.kind not in _BLOCKS:
            found.append(child)
        found += _thread_loops(child)
    return found


def _children(stmt) -> list:
    if isinstance(stmt, S.Seq):
        return list(stmt.stmts)
    if isinstance(stmt, S.IfThenElse):
        return [stmt.then] + ([stmt.else_] if stmt.else_ is not None else [])
    if isinstance(stmt, (S.For, S.Allocate, S.LetStmt)):
        return [stmt.body]
    return []


class _Run:
    def __init__(self, arrays: dict, lanes: dict, width: int) -> None:
        self.arrays, self.lanes, self.width = arrays, lanes, width

    def stmt(self, s, env: dict, mask: np.ndarray) -> None:
        if isinstance(s, S.Seq):
            for child in s.stmts:
                self.stmt(child, env, mask)
        elif isinstance(s, S.For):
            if s.kind.is_thread_binding and s.kind not in _BLOCKS:
                self.stmt(s.body, {**env, s.var: self.lanes[s.var]}, mask)
            else:  # blocks, serial and unrolled loops: one value at a time for every lane
                for i in range(int(self.expr(s.extent, env))):
                    self.stmt(s.body, {**env, s.var: i}, mask)
        elif isinstance(s, S.LetStmt):
            self.stmt(s.body, {**env, s.var: self.expr(s.value, env)}, mask)
        elif isinstance(s, S.Allocate):
            self.arrays[s.buffer.name] = np.full(s.buffer.physical_elems, np.nan)  # padded rows included
            self.stmt(s.body, env, mask)
        elif isinstance(s, S.IfThenElse):
            cond = np.broadcast_to(np.asarray(self.expr(s.cond, env), dtype=bool), mask.shape)
            self.stmt(s.then, env, mask & cond)
            if s.else_ is not None:
                self.stmt(s.else_, env, mask & ~cond)
        elif isinstance(s, S.Store):
            index = np.broadcast_to(self._flat(s.buffer, s.indices, env), mask.shape)
            value = np.broadcast_to(self.expr(s.value, env), mask.shape)
            self.arrays[s.buffer.name][index[mask]] = value[mask]
        elif not isinstance(s, S.Barrier):
            raise NotImplementedError(f"ir_blocks runs no {type(s).__name__}")

    def _flat(self, buffer, indices: tuple, env: dict):
        """A lowered index is flat (rows padded as the buffer says); a multi-index is row-major over the shape."""
        if len(indices) == 1:
            return np.asarray(self.expr(indices[0], env), dtype=np.int64)
        flat = 0
        for index, extent in zip(indices, buffer.shape, strict=True):
            flat = flat * int(extent) + np.asarray(self.expr(index, env), dtype=np.int64)
        return flat

    def expr(self, e, env: dict):
        if isinstance(e, (E.IntImm, E.FloatImm)):
            return e.value
        if isinstance(e, E.Var):
            return env[e]
        if isinstance(e, E.BinOp):
            return _OPS[e.op](self.expr(e.a, env), self.expr(e.b, env))
        if isinstance(e, E.Not):
            return np.logical_not(self.expr(e.a, env))
        if isinstance(e, E.Cast):
            return self.expr(e.value, env)
        if isinstance(e, E.Load):
            array = self.arrays[e.buffer.name]
            index = np.clip(self._flat(e.buffer, e.indices, env), 0, array.size - 1)  # masked lanes read anywhere
            return array[index]
        raise NotImplementedError(f"ir_blocks evaluates no {type(e).__name__}")
