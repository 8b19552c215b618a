"""The IR walk behind `compiler_core.features`: weighted counts and memory access patterns of one kernel.

Every node is visited once with a weight, the product of the extents of all enclosing loops (an upper
bound where an extent is not constant), times a branch's share where the IR gives it (IfThenElse.then_share,
e.g. a GEMM's interior and edge blocks). Variables are matched by name, as in the generated code.
Access patterns are found by evaluating each flattened index, with numpy, for the lanes that issue
together: the 32 threads of a warp on CUDA (threadIdx.x fastest, then y, z), a vector of consecutive
iterations of the innermost loop on C; every other loop variable takes its lowest value.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.visitor import child_fields

KINDS = ("serial", "parallel", "unrolled", "vectorized", "thread", "block")
KIND_INDEX = {k: KINDS.index(k.name.split("_")[0].lower()) for k in S.ForKind}
# everything else is per-thread: "local"
SCOPE_NAME = {S.Scope.GLOBAL: "global", S.Scope.SHARED: "shared", S.Scope.SHARED_DYN: "shared"}
WMMA_TILE = 16 * 16
WMMA_MMA_FLOPS = 2 * 16 * 16 * 16
AMX_TILE_FLOPS = 2 * 16 * 16 * 32  # one tdpbf16ps: a 16 x 16 float32 tile += 16 x 32 by 32 x 16
CUDA_SECTOR_BYTES = 32
CPU_LINE_BYTES = 64
BANKS = 32
_ATOMS = (E.IntImm, E.FloatImm, E.Var)
_LANE_OPS = {"+": np.add, "-": np.subtract, "*": np.multiply, "min": np.minimum, "max": np.maximum,
             "<": np.less, "<=": np.less_equal, "==": np.equal, "!=": np.not_equal,
             "&&": np.logical_and, "||": np.logical_or}
_SCALAR_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv,
               "%": operator.mod, "min": min, "max": max, "<": operator.lt, "<=": operator.le, "==": operator.eq,
               "!=": operator.ne, "&&": lambda a, b: bool(a) and bool(b), "||": lambda a, b: bool(a) or bool(b),
               ">>": operator.rshift, "&": operator.and_}
_REGISTER_SCOPES = {S.Scope.LOCAL: 0, S.Scope.WMMA_A: 8, S.Scope.WMMA_B: 8, S.Scope.WMMA_B_COL: 8,
                    S.Scope.WMMA_ACC: 8}
_THREAD_AXES = (S.ForKind.THREAD_X, S.ForKind.THREAD_Y, S.ForKind.THREAD_Z)
_DTYPES: dict[str, tuple[bool, int, int]] = {}


def dtype_info(dtype: str) -> tuple[bool, int, int]:
    """(is float, lanes, bytes of one scalar)."""
    info = _DTYPES.get(dtype)
    if info is None:
        scalar = E.scalar_of(dtype)
        info = _DTYPES[dtype] = (scalar in E.FLOAT_TYPES, E.lanes_of(dtype), S.DTYPE_BYTES.get(scalar, 4))
    return info


def _interval(op: str, a: tuple, b: tuple, divisor) -> tuple | None:
    if op == "+":
        return a[0] + b[0], a[1] + b[1]
    if op == "-":
        return a[0] - b[1], a[1] - b[0]
    if op == "*":
        products = [x * y for x in a for y in b]
        return min(products), max(products)
    if op in ("min", "max"):
        f = min if op == "min" else max
        return f(a[0], b[0]), f(a[1], b[1])
    if op == "//" and divisor:
        return a[0] // divisor, a[1] // divisor
    if op == "%" and divisor:
        return (a if 0 <= a[0] and a[1] < divisor else (0, divisor - 1)) if a[0] >= 0 else (1 - divisor, divisor - 1)
    if op in ("<", "<=", "==", "!=", "&&", "||"):
        return 0, 1
    return None


class KernelWalk:
    """Walks one kernel body; totals land in `self.c` (name -> float), loop statistics in the lists."""

    def __init__(self, target) -> None:
        self.cuda = target.kind == "cuda"
        self.warp = target.warp_size if self.cuda else max(1, target.vector_lanes_f32)
        self.sector = CUDA_SECTOR_BYTES if self.cuda else CPU_LINE_BYTES
        self.c: dict[str, float] = {}
        self.loop_count = [0] * len(KINDS)
        self.max_extent = [0] * len(KINDS)
        self.path = [1] * len(KINDS)
        self.max_path = [1] * len(KINDS)
        self.depth = self.max_depth = 0
        self.loops: list[tuple[str, int, int, S.ForKind]] = []  # (var, extent, kind index, kind), outermost first
        self.ranges: dict[str, tuple[int, int]] = {}  # loop variable -> (lowest, highest) value
        self.lets: dict[str, tuple[E.Expr, int]] = {}  # let variable -> (value, binding serial)
        self.serial = 0
        self.lane_memo: dict = {}
        self.register_words = 0
        self.leaf = (-1.0, 0, len(KINDS))  # (weight, innermost extent, kind index) of the most executed store
        self.pattern = {"bytes": 0.0, "eff": 0.0, "conflict_bytes": 0.0, "conflict": 0.0}

    def add(self, name: str, value: float) -> None:
        self.c[name] = self.c.get(name, 0.0) + value

    # ---- statements --------------------------------------------------------------------
    def stmt(self, s: S.Stmt, w: float) -> None:
        t = type(s)
        if t is S.Seq:
            for child in s.stmts:
                self.stmt(child, w)
        elif t is S.For:
            self.loop(s, w)
        elif t is S.Store:
            self.access(s.buffer, s.indices, s.lanes, w, "store")
            self.expr(s.value, w)
            for i in s.indices:
                self.expr(i, w)
            self.note_leaf(w)
        elif t is S.LetStmt:
            self.expr(s.value, w)
            self.serial += 1
            self.lets[s.var.name] = (s.value, self.serial)
            self.stmt(s.body, w)
        elif t is S.IfThenElse:
            self.add("guards", w)
            self.add("static_guards", 1)
            self.expr(s.cond, w)
            share = 1.0 if s.then_share is None else s.then_share  # unknown: both branches at full weight
            self.stmt(s.then, w * share)
            if s.else_ is not None:
                self.stmt(s.else_, w if s.then_share is None else w * (1.0 - share))
        elif t is S.Allocate:
            words_per_elem = _REGISTER_SCOPES.get(s.buffer.scope)
            if words_per_elem is not None:  # the rule of passes.verify_resources.register_estimate
                self.add("local_bytes", s.buffer.nbytes)
                self.register_words += words_per_elem * s.buffer.physical_elems if words_per_elem \
                    else -(-s.buffer.nbytes // 4)
            self.stmt(s.body, w)
        elif t is S.Barrier:
            self.add("barriers", w)
            self.add("static_barriers", 1)
        elif t is S.Evaluate:
            self.expr(s.value, w)
            self.note_leaf(w)
        else:  # a node type added after this module: still count what is inside it
            self.generic(s, w)

    def loop(self, s: S.For, w: float) -> None:
        k = KIND_INDEX[s.kind]
        name = s.var.name
        lo = self.bounds(s.min) if s.min is not None else (0, 0)
        if type(s.extent) is E.IntImm:
            extent = max(s.extent.value, 0)
        else:
            self.add("dynamic_extents", 1)
            span = self.bounds(s.extent)
            extent = max(int(span[1]), 0) if span is not None else 1
        self.loop_count[k] += 1
        self.max_extent[k] = max(self.max_extent[k], extent)
        saved = self.path[k], self.ranges.get(name), self.lets.pop(name, None)
        self.path[k] *= max(extent, 1)
        self.max_path[k] = max(self.max_path[k], self.path[k])
        self.ranges[name] = (lo[0], lo[1] + max(extent, 1) - 1) if lo is not None else (0, max(extent, 1) - 1)
        self.depth += 1
        self.max_depth = max(self.max_depth, self.depth)
        self.loops.append((name, extent, k, s.kind))
        self.stmt(s.body, w * extent)
        self.loops.pop()
        self.depth -= 1
        self.path[k] = saved[0]
        if saved[1] is None:
            del self.ranges[name]
        else:
            self.ranges[name] = saved[1]
        if saved[2] is not None:
            self.lets[name] = saved[2]

    def note_leaf(self, w: float) -> None:
        if w > self.leaf[0]:
            self.leaf = (w, self.loops[-1][1], self.loops[-1][2]) if self.loops else (w, 0, len(KINDS))

    def generic(self, node, w: float) -> None:
        for name in child_fields(type(node)):
            value = getattr(node, name)
            for v in value if isinstance(value, tuple) else (value,):
                if isinstance(v, S.Stmt):
                    self.stmt(v, w)
                elif isinstance(v, E.Expr):
                    self.expr(v, w)

    # ---- expressions -------------------------------------------------------------------
    def expr(self, e: E.Expr, w: float) -> None:
        t = type(e)
        if t in _ATOMS:
            return
        if t is E.BinOp:
            is_float, lanes, _ = dtype_info(e.dtype)
            self.add("flops" if is_float else "int_ops", w * lanes)
            self.expr(e.a, w)
            self.expr(e.b, w)
        elif t is E.Load:
            self.access(e.buffer, e.indices, e.lanes, w, "load")
            for i in e.indices:
                self.expr(i, w)
        elif t is E.Cast:
            is_float, lanes, _ = dtype_info(e.dtype)
            if is_float and e.dtype != e.value.dtype:
                self.add("casts", w * lanes)
            self.expr(e.value, w)
        elif t is E.Call:
            self.call(e, w)
        elif t is E.Select:
            is_float, lanes, _ = dtype_info(e.dtype)
            self.add("flops" if is_float else "int_ops", w * lanes)
            self.expr(e.cond, w)
            self.expr(e.true_value, w)
            self.expr(e.false_value, w)
        elif t is E.Not:
            self.add("int_ops", w)
            self.expr(e.a, w)
        elif t is E.Address:
            for i in e.indices:
                self.expr(i, w)
        elif t is E.Broadcast:
            self.expr(e.value, w)
        else:  # any node type added later
            self.generic(e, w)

    def call(self, e: E.Call, w: float) -> None:
        name, args = e.name, e.args
        if name == "cp_async" and type(args[2]) is E.IntImm:
            self.pointer_move(args[1], "load", args[2].value, w)
            self.pointer_move(args[0], "store", args[2].value, w)
        elif name == "wmma_load":  # wmma calls are warp-collective: one per warp, not per thread
            self.pointer_move(args[1], "load", WMMA_TILE, w / self.warp, elements=True)
        elif name == "wmma_store":
            self.pointer_move(args[0], "store", WMMA_TILE, w / self.warp, elements=True)
        elif name == "wmma_mma":
            self.add("mma", w / self.warp)
            self.add("flops", w / self.warp * WMMA_MMA_FLOPS)
        elif name in ("f16_load", "f16_store") and type(args[0]) is E.Address:  # converted on the bits (C)
            self.access(args[0].buffer, args[0].indices, 1, w, "load" if name == "f16_load" else "store")
            self.add("casts", w)
        elif name == "atomic_add":
            self.add("atomics", w)
            self.add("flops", w)
            self.pointer_move(args[0], "load", 1, w, elements=True)
            self.pointer_move(args[0], "store", 1, w, elements=True)
        elif name == "amx_tile":  # (c, c_stride, accumulate, a, a_stride, b, b_stride, steps, row tiles, col tiles)
            tiles = args[8].value * args[9].value
            steps = args[7].value if type(args[7]) is E.IntImm else 1
            self.add("mma", w * tiles * steps)
            self.add("flops", w * tiles * steps * AMX_TILE_FLOPS)
        elif name.startswith("shfl"):
            self.add("shuffles", w)
        elif not (name.startswith("cp_async") or name.startswith("wmma")):
            self.add("special", w * dtype_info(e.dtype)[1])
        for a in args:
            self.expr(a, w)

    def pointer_move(self, addr, direction: str, amount: int, w: float, elements: bool = False) -> None:
        """Traffic of an intrinsic through a pointer: `amount` bytes, or elements of the buffer's dtype."""
        if type(addr) is not E.Address:
            return
        _, lanes, scalar = dtype_info(addr.buffer.dtype)
        nbytes = amount * scalar * lanes if elements else amount
        scope = SCOPE_NAME.get(addr.buffer.scope, "local")
        self.add(f"{scope}.{direction}", w * nbytes)
        if not elements:  # cp.async: one copy per thread, so its lanes have a pattern; wmma tiles do not
            self.pattern_of(addr.buffer, addr.indices, scope, nbytes, w * nbytes)

    # ---- memory accesses ---------------------------------------------------------------
    def access(self, buf: S.Buffer, indices: tuple, lanes: int, w: float, direction: str) -> None:
        _, buf_lanes, scalar = dtype_info(buf.dtype)
        width = scalar * buf_lanes * lanes
        scope = SCOPE_NAME.get(buf.scope, "local")
        self.add(f"{scope}.{direction}", w * width)
        key = "max_load_lanes" if direction == "load" else "max_store_lanes"
        self.c[key] = max(self.c.get(key, 0.0), lanes * buf_lanes)
        self.c["max_access_bytes"] = max(self.c.get("max_access_bytes", 0.0), width)
        if scope == "global":
            self.add("global.accesses", w)
            if lanes * buf_lanes > 1:
                self.add("global.vector", w * width)
        if scope != "local" and indices:
            self.pattern_of(buf, indices, scope, width, w * width)

    def pattern_of(self, buf: S.Buffer, indices: tuple, scope: str, width: int, nbytes: float) -> None:
        idx = self.lane_values(indices[-1])
        if scope == "global":
            if idx is None:
                self.add("global.unknown", nbytes)
                return
            starts = _byte_offsets(idx, buf)
            if starts.size == 1 or (starts == starts[0]).all():
                self.add("global.invariant", nbytes)
                return
            eff = _sector_efficiency(starts, width, self.sector)
            self.add("global.coalesced" if eff > 0.999 else "global.strided", nbytes)
            self.pattern["bytes"] += nbytes
            self.pattern["eff"] += nbytes * eff
        elif self.cuda and idx is not None:
            starts = _byte_offsets(idx, buf)
            self.pattern["conflict_bytes"] += nbytes
            self.pattern["conflict"] += nbytes * math.log2(_bank_ways(starts, width))

    # ---- value ranges and lane values ----------------------------------------------------
    def bounds(self, e: E.Expr) -> tuple | None:
        """(lowest, highest) value of an integer expression over the enclosing loops, or None."""
        t = type(e)
        if t is E.IntImm:
            return e.value, e.value
        if t is E.Var:
            if e.name in self.ranges:
                return self.ranges[e.name]
            let = self.lets.get(e.name)
            return self.bounds(let[0]) if let is not None else None
        if t is E.BinOp:
            a, b = self.bounds(e.a), self.bounds(e.b)
            if a is None or b is None:
                return (b if a is None else a) if e.op == "min" and (a or b) else None
            divisor = b[0] if b[0] == b[1] and b[0] > 0 else 0
            return _interval(e.op, a, b, divisor)
        if t is E.Select:
            a, b = self.bounds(e.true_value), self.bounds(e.false_value)
            return (min(a[0], b[0]), max(a[1], b[1])) if a is not None and b is not None else None
        if t is E.Cast:
            return self.bounds(e.value)
        return None

    def lane_env(self) -> tuple[dict, tuple]:
        """Values of the loop variables for the lanes issued together, and a key naming that context."""
        env = {name: self.ranges[name][0] for name, *_ in self.loops}
        if self.cuda:
            threads = [(name, ext, kind) for name, ext, _, kind in self.loops if kind in _THREAD_AXES]
            threads.sort(key=lambda x: _THREAD_AXES.index(x[2]))
            total = math.prod(max(ext, 1) for _, ext, _ in threads) if threads else 1
            lane, stride = np.arange(min(self.warp, total)), 1
            for name, ext, _ in threads:
                env[name] = (lane // stride) % max(ext, 1) + self.ranges[name][0]
                stride *= max(ext, 1)
            return env, tuple(name for name, *_ in threads)
        if self.loops:
            name, ext = self.loops[-1][0], self.loops[-1][1]
            env[name] = np.arange(min(self.warp, max(ext, 1))) + self.ranges[name][0]
            return env, (name, len(self.loops))
        return env, ()

    def lane_values(self, index: E.Expr):
        env, ctx = self.lane_env()
        try:
            return self._lanes(index, env, ctx)
        except (ArithmeticError, ValueError, TypeError):
            return None

    def _lanes(self, e: E.Expr, env: dict, ctx: tuple):
        t = type(e)
        if t is E.IntImm:
            return e.value
        if t is E.Var:
            if e.name in env:
                return env[e.name]
            let = self.lets.get(e.name)
            if let is None:
                return 0  # a scalar parameter
            key = (let[1], ctx)
            if key not in self.lane_memo:
                self.lane_memo[key] = self._lanes(let[0], env, ctx)
            return self.lane_memo[key]
        if t is E.BinOp:
            a, b = self._lanes(e.a, env, ctx), self._lanes(e.b, env, ctx)
            if a is None or b is None:
                return None
            if type(a) is int and type(b) is int:  # most index terms do not vary across lanes: plain Python
                op = _SCALAR_OPS.get(e.op)
                return None if op is None or (b == 0 and e.op in ("//", "%")) else int(op(a, b))
            if e.op in ("//", "%"):
                if np.any(np.asarray(b) == 0):
                    return None
                return np.floor_divide(a, b) if e.op == "//" else np.remainder(a, b)
            op = _LANE_OPS.get(e.op)
            return op(a, b) if op is not None else None
        if t is E.Select:
            c = self._lanes(e.cond, env, ctx)
            a, b = self._lanes(e.true_value, env, ctx), self._lanes(e.false_value, env, ctx)
            return None if c is None or a is None or b is None else np.where(c, a, b)
        if t is E.Cast and not dtype_info(e.dtype)[0]:
            return self._lanes(e.value, env, ctx)
        return None  # data-dependent (a load) or floating point


def _byte_offsets(idx, buf: S.Buffer) -> np.ndarray:
    _, lanes, scalar = dtype_info(buf.dtype)
    return np.atleast_1d(np.asarray(idx, dtype=np.int64)) * (scalar * lanes)


def _sector_efficiency(starts: np.ndarray, width: int, sector: int) -> float:
    """Fewest sectors (cache lines) that could hold the distinct bytes requested / sectors actually touched."""
    first, last = starts // sector, (starts + width - 1) // sector
    span = int((last - first).max())
    if span == 0:
        touched = np.unique(first).size
    else:
        sectors = first[:, None] + np.arange(span + 1)[None, :]
        touched = np.unique(sectors[sectors <= last[:, None]]).size
    ideal = -(-(np.unique(starts).size * width) // sector)
    return min(1.0, ideal / touched)


def _bank_ways(starts: np.ndarray, width: int) -> float:
    """Largest number of distinct 4-byte words that one bank serves in one phase of a shared access."""
    words_per_lane = max(1, -(-width // 4))
    phase = max(1, (BANKS * 4) // max(width, 4))
    words = (starts[:, None] // 4 + np.arange(words_per_lane)[None, :])
    ways = 1
    for p in range(0, len(starts), phase):
        distinct = np.unique(words[p:p + phase])
        ways = max(ways, int(np.bincount(distinct % BANKS).max()))
    return float(ways)
