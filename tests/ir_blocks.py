"""A test double for a CUDA device: runs a PrimFunc's IR in numpy, block after block, every thread of a block as
one row of an array (the whole block executes each statement before the next, so a barrier holds by
construction). Values are (threads, lanes) arrays, so vector loads and stores of `lanes` elements work as the
kernel's; shared buffers are one per block, local ones one per thread, WMMA fragments one per warp. Enough of the IR
for the loop-IR templates (transposes, row reductions, elementwise chains, the SIMT and WMMA GEMMs and convs): index
arithmetic, loads, masked stores, lets, allocations, serial and thread loops, branches, selects, broadcasts, casts,
math calls, warp shuffles, cp.async and the WMMA fragment operations (m16n16k16). An intrinsic it does not know is
an error, not a guess.
It checks a kernel's arithmetic on any CI host; the gpu tier checks the compiled kernel itself."""
from __future__ import annotations

import math

import numpy as np

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S

_OPS = {"&": np.bitwise_and, ">>": np.right_shift, "+": np.add, "-": np.subtract, "*": np.multiply,
        "//": np.floor_divide, "%": np.mod, "/": np.divide, "min": np.minimum, "max": np.maximum, "<": np.less,
        "<=": np.less_equal, "==": np.equal, "!=": np.not_equal, "&&": np.logical_and, "||": np.logical_or}
_CALLS = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh, "abs": np.abs, "fabs": np.abs,
          "max": np.maximum, "min": np.minimum, "fma": lambda a, b, c: a * b + c, "rsqrt": lambda x: 1 / np.sqrt(x),
          "erf": np.vectorize(math.erf, otypes=[np.float64]), "sigmoid": lambda x: 1 / (1 + np.exp(-x))}
_SHUFFLES = ("shfl_xor", "shfl_down", "shfl_idx")
_FRAGMENTS = (S.Scope.WMMA_A, S.Scope.WMMA_B, S.Scope.WMMA_B_COL, S.Scope.WMMA_ACC)
FRAG = 16  # WMMA's m16n16k16 tiles


def _is_int(dtype: str) -> bool:
    return dtype.startswith(("int", "uint", "bool"))
WARP = 32
_BLOCKS = (S.ForKind.BLOCK_X, S.ForKind.BLOCK_Y, S.ForKind.BLOCK_Z)


def run_blocks(func: S.PrimFunc, inputs: dict, outputs: dict) -> dict:
    """`inputs`: {buffer name: flat array}; `outputs`: {buffer name: element count}. Returns the outputs, NaN
    where the kernel wrote nothing."""
    arrays = {name: np.asarray(a, dtype=np.float64).ravel() for name, a in inputs.items()}
    arrays.update({name: np.full(n, np.nan) for name, n in outputs.items()})
    _run_kernel(func, arrays)
    return {name: arrays[name] for name in outputs}


def run_module(module: S.Module, inputs: list) -> list:
    """A lowered module's kernels in order over flat `inputs` (the op's, in order), its workspaces zeroed as the
    runtime zeroes them (NaN where the module overwrites them, so a read before a write shows). Returns the
    outputs, NaN where no kernel wrote."""
    arrays = {b.name: np.asarray(a, dtype=np.float64).ravel()
              for b, a in zip(module.args[:module.num_inputs], inputs, strict=True)}
    outputs = module.args[module.num_inputs:]
    arrays.update({b.name: np.full(b.physical_elems, np.nan) for b in outputs})
    arrays.update({b.name: np.full(b.physical_elems, 0.0 if module.zeroed_once(b) else np.nan)
                   for b in module.workspaces})
    for kernel in module.kernels:
        if not isinstance(kernel, S.PrimFunc):
            raise NotImplementedError(f"ir_blocks runs loop IR, not the rendered kernel {kernel.name}")
        _run_kernel(kernel, arrays)
    return [arrays[b.name] for b in outputs]


def _run_kernel(func: S.PrimFunc, arrays: dict) -> None:
    threads = _thread_loops(func.body)
    extents = [int(loop.extent.value) for loop in threads]
    mesh = np.meshgrid(*(np.arange(n) for n in extents), indexing="ij") if threads else []
    lanes = {loop.var: m.reshape(-1, 1) for loop, m in zip(threads, mesh, strict=True)}
    width = int(np.prod(extents)) if threads else 1
    linear, scale = np.zeros(width, dtype=np.int64), 1  # threadIdx.x fastest, then y, then z: the warps' order
    for kind in (S.ForKind.THREAD_X, S.ForKind.THREAD_Y, S.ForKind.THREAD_Z):
        for loop, m in zip(threads, mesh, strict=True):
            if loop.kind == kind:
                linear += m.ravel() * scale
                scale *= int(loop.extent.value)
    _Run(arrays, lanes, width, linear).stmt(func.body, {}, np.ones(width, dtype=bool))


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
    def __init__(self, arrays: dict, lanes: dict, width: int, linear: np.ndarray) -> None:
        self.arrays, self.lanes, self.width = arrays, lanes, width
        self.row_of = np.empty(width, dtype=np.int64)  # linear thread id -> row of the value arrays
        self.row_of[linear] = np.arange(width)
        self.linear = linear
        self.local: set = set()  # names of per-thread buffers: arrays of (threads, elements)
        self.rows = np.arange(width).reshape(-1, 1)

    def stmt(self, s, env: dict, mask: np.ndarray) -> None:
        if isinstance(s, S.Seq):
            for child in s.stmts:
                self.stmt(child, env, mask)
        elif isinstance(s, S.For):
            if s.kind.is_thread_binding and s.kind not in _BLOCKS:
                self.stmt(s.body, {**env, s.var: self.lanes[s.var]}, mask)
            else:  # blocks, serial and unrolled loops: one value at a time for every thread
                start = 0 if s.min is None else int(self.expr(s.min, env))
                for i in range(start, start + int(self.expr(s.extent, env))):
                    self.stmt(s.body, {**env, s.var: i}, mask)
        elif isinstance(s, S.LetStmt):
            self.stmt(s.body, {**env, s.var: self.expr(s.value, env)}, mask)
        elif isinstance(s, S.Allocate):
            name, elems = s.buffer.name, s.buffer.physical_elems  # padded rows included
            fill = 0 if _is_int(s.buffer.dtype) else np.nan  # index tables stay integers
            if s.buffer.scope in _FRAGMENTS:  # one 16 x 16 tile per fragment per warp
                self.arrays[name] = np.full((self.width // WARP + 1, elems, FRAG, FRAG), np.nan)
                self.stmt(s.body, env, mask)
                return
            if s.buffer.scope in (S.Scope.SHARED, S.Scope.SHARED_DYN):
                self.arrays[name] = np.full(elems, fill)
            else:  # registers and local arrays: each thread its own
                self.arrays[name] = np.full((self.width, elems), fill)
                self.local.add(name)
            self.stmt(s.body, env, mask)
        elif isinstance(s, S.IfThenElse):
            cond = self._per_thread(self.expr(s.cond, env)).astype(bool)
            self.stmt(s.then, env, mask & cond)
            if s.else_ is not None:
                self.stmt(s.else_, env, mask & ~cond)
        elif isinstance(s, S.Store):
            self._store(s, env, mask)
        elif isinstance(s, S.Evaluate):
            self._intrinsic(s.value, env, mask)
        elif not isinstance(s, S.Barrier):
            raise NotImplementedError(f"ir_blocks runs no {type(s).__name__}")

    def _per_thread(self, value) -> np.ndarray:
        """A scalar or per-thread value as one entry per thread."""
        return np.broadcast_to(np.asarray(value).reshape(-1, 1)[:, 0] if np.ndim(value) else value, (self.width,))

    def _index(self, buffer, indices: tuple, env: dict) -> np.ndarray:
        """Per thread, the flat element: a lowered index is flat (rows padded as the buffer says); a multi-index
        is row-major over the shape."""
        if len(indices) == 1:
            flat = self.expr(indices[0], env)
        else:
            flat = 0
            for index, extent in zip(indices, buffer.shape, strict=True):
                flat = flat * int(extent) + self.expr(index, env)
        return self._per_thread(flat).astype(np.int64)

    def _store(self, s, env: dict, mask: np.ndarray) -> None:
        index = self._index(s.buffer, s.indices, env)[mask]
        value = self.expr(s.value, env)
        value = np.broadcast_to(np.asarray(value).reshape(-1, s.lanes) if np.ndim(value) else value,
                                (self.width, s.lanes))[mask]
        array, lane = self.arrays[s.buffer.name], np.arange(s.lanes)
        if s.buffer.name in self.local:
            array[self.rows[mask], index[:, None] + lane] = value
        else:
            array[index[:, None] + lane] = value

    def expr(self, e, env: dict):
        if isinstance(e, (E.IntImm, E.FloatImm)):
            return e.value
        if isinstance(e, E.Var):
            return env[e]
        if isinstance(e, E.BinOp):
            return _OPS[e.op](self.expr(e.a, env), self.expr(e.b, env))
        if isinstance(e, E.Not):
            return np.logical_not(self.expr(e.a, env))
        if isinstance(e, E.Select):
            return np.where(self.expr(e.cond, env), self.expr(e.true_value, env), self.expr(e.false_value, env))
        if isinstance(e, E.Broadcast):
            return np.broadcast_to(np.asarray(self.expr(e.value, env)).reshape(-1, 1), (self.width, e.lanes))
        if isinstance(e, E.Cast):
            value = self.expr(e.value, env)
            return np.trunc(value).astype(np.int64) if e.dtype.startswith(("int", "uint")) else value
        if isinstance(e, E.Call) and e.name in _CALLS:
            return _CALLS[e.name](*(self.expr(a, env) for a in e.args))
        if isinstance(e, E.Call) and e.name in _SHUFFLES:
            return self._shuffle(e.name, self.expr(e.args[0], env), self._per_thread(self.expr(e.args[1], env)))
        if isinstance(e, E.Load):
            return self._load(e, env)
        raise NotImplementedError(f"ir_blocks evaluates no {type(e).__name__} {getattr(e, 'name', '')}".rstrip())

    def _intrinsic(self, call, env: dict, mask: np.ndarray) -> None:
        """cp.async (a copy: the block runs in lockstep, so commit and wait have nothing to order) and the WMMA
        fragment operations, which a warp issues together: each warp's first active thread gives the operands."""
        name, args = call.name, call.args
        if name in ("cp_async_commit", "cp_async_wait"):
            return
        if name == "cp_async":
            (dst, at), (src, frm) = self._address(args[0], env), self._address(args[1], env)
            for e in range(int(self.expr(args[2], env)) // S.dtype_bytes(dst.dtype)):
                self.arrays[dst.name][at[mask] + e] = self.arrays[src.name][frm[mask] + e]
            return
        warps = np.unique(self.linear[mask] // WARP)
        for wp in warps:
            lanes = self.row_of[wp * WARP + np.arange(min(WARP, self.width - wp * WARP))]
            row = lanes[np.argmax(mask[lanes])]
            self._fragment_op(name, args, env, wp, row)

    def _fragment(self, load, env: dict, wp: int, row: int):
        """(the warp's fragment array, its index) of a fragment operand (a Load of a fragment buffer)."""
        index = int(self._index(load.buffer, load.indices, env)[row])
        return self.arrays[load.buffer.name][wp], index

    def _fragment_op(self, name: str, args: tuple, env: dict, wp: int, row: int) -> None:
        if name == "wmma_fill":
            frags, i = self._fragment(args[0], env, wp, row)
            frags[i] = self._per_thread(self.expr(args[1], env))[row]
        elif name == "wmma_mma":
            (d, i), (a, j), (b, k), (c, m) = (self._fragment(x, env, wp, row) for x in args)
            d[i] = a[j] @ b[k] + c[m]
        elif name in ("wmma_load", "wmma_store"):
            frag_arg, addr_arg = (args[0], args[1]) if name == "wmma_load" else (args[1], args[0])
            frags, i = self._fragment(frag_arg, env, wp, row)
            buffer, at = self._address(addr_arg, env)
            ldm = int(self._per_thread(self.expr(args[2], env))[row])
            r, c = np.meshgrid(np.arange(FRAG), np.arange(FRAG), indexing="ij")
            col_major = name == "wmma_load" and frag_arg.buffer.scope == S.Scope.WMMA_B_COL
            offsets = at[row] + (c * ldm + r if col_major else r * ldm + c)
            array = self.arrays[buffer.name]
            if name == "wmma_load":
                frags[i] = array[offsets]
            else:
                array[offsets] = frags[i]
        else:
            raise NotImplementedError(f"ir_blocks runs no intrinsic {name}")

    def _address(self, address, env: dict):
        """(buffer, per-thread flat element) of an Address."""
        return address.buffer, self._index(address.buffer, address.indices, env)

    def _shuffle(self, name: str, value, arg: np.ndarray) -> np.ndarray:
        """__shfl_*_sync over full warps: each thread reads `value` of another lane of its warp (shfl_down past the
        warp's end reads its own, as CUDA's does)."""
        value = np.asarray(value).reshape(self.width, -1) if np.ndim(value) else np.full((self.width, 1), value)
        lane, base = self.linear % WARP, self.linear - self.linear % WARP
        if name == "shfl_xor":
            source = base + (lane ^ arg)
        elif name == "shfl_down":
            source = np.where(lane + arg < WARP, self.linear + arg, self.linear)
        else:
            source = base + arg
        return value[self.row_of[source]]

    def _load(self, e, env: dict) -> np.ndarray:
        array = self.arrays[e.buffer.name]
        size = array.shape[-1]
        index = self._index(e.buffer, e.indices, env)[:, None] + np.arange(e.lanes)
        index = np.clip(index, 0, size - 1)  # a masked thread may read anywhere
        values = array[self.rows, index] if e.buffer.name in self.local else array[index]
        return values  # (threads, lanes)
