"""CUDA template for float16 and bfloat16 attention on WMMA tensor cores (head_dim a multiple of 16).

A block holds 16 query rows per warp (`warps` warps). It stages its query rows in shared memory once (zeros past
the end of the head) and keeps each warp's 16 x head_dim slice as WMMA A fragments. For each tile of `kv_tile` keys:
1. the block stages the tile's keys and values in shared memory (zeros past the end), one barrier;
2. each warp computes its 16 x kv_tile scores on tensor cores, 16 columns at a time (K read column-major: a key
   row is a column of K^T), into its float32 score tile, one barrier;
3. softmax in float32, two lanes per query row (columns part, part + 2, ...): scale and mask, the tile's max (a
   shuffle joins the two lanes), one rescale of the running sum and of the lane's output columns by
   exp(old max - new max), p = exp(score - max) written as the input type into the warp's P tile, one barrier;
4. P V on tensor cores into the warp's 16 x head_dim float32 staging tile, one barrier, and the two lanes of each
   row add it into their output registers. That barrier also lets the next tile's staging overwrite K and V, and
   the next tile's barriers come before the staging tile is written again.
The barrier between writing P and the WMMA loads that read it orders lanes of one warp (load_matrix_sync is
warp-collective, but shared-memory writes of other lanes are only ordered by a barrier); the CPU emulator runs
WMMA loads as meetings of the warp and cannot show it missing, the GPU tier can.
Rounding p to the input type before the second product is what FlashAttention does too (the error model charges
it). Query rows past the end store nothing; keys past the end, and under `causal` keys after the query, score -inf;
under `causal` a block walks only the tiles that hold a key one of its rows sees.
"""
from __future__ import annotations

import contextlib
import dataclasses

from compiler_core.errors import WorkloadError
from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.ops.attention import scale
from compiler_core.passes.verify_resources import BASE_REGISTERS
from compiler_core.schedules.cuda.attention_tensors import attention_tensors
from compiler_core.schedules.cuda.block_reduce import NEG_INF, pow2_ceil
from compiler_core.schedules.cuda.gemm_wmma_tiling import FRAG, SMEM_ALIGN, TENSOR_CORES, WARP
from compiler_core.space import Constraint, Knob, Space

FLOAT_LOWEST = -3.4028234663852886e38  # a running max's start: exp(lowest - max) is 0, never NaN


def applies(w, target) -> bool:
    """Half types whose head_dim is whole fragments, on a device with their WMMA tensor cores."""
    return w.dtype in TENSOR_CORES and w["head_dim"] % FRAG == 0 and target.has_tensor_cores(TENSOR_CORES[w.dtype])


LOCAL_SCALARS = 3  # the running max and sum, and a lane's partial sum (the one-pass kernel: its tile max too)
FLOAT_PAD = 4  # floats added to each row of the score and staging tiles: the two lanes of each row read column
# part + 2t of 16 rows at once, and a row stride of a multiple of 32 floats would put all 16 rows in one bank


def shared_bytes(w, c: dict) -> int:
    D, T, pad, rows = w["head_dim"], c["kv_tile"], c["pad"], FRAG * c["warps"]
    halves = (rows + 2 * T) * (D + pad) + c["warps"] * FRAG * (T + pad)  # Q, K, V tiles and the P tiles
    floats = c["warps"] * FRAG * (T + D + 2 * FLOAT_PAD)  # the score tiles and the P V staging tiles
    return 2 * halves + 4 * floats


def registers(w, c: dict) -> int:
    """verify_resources' estimate of a lane's registers (8 per fragment): the output columns, the query fragments,
    one fragment each of K, P, V and the scores' accumulator, max_first's output accumulators, and the scalars."""
    D = w["head_dim"]
    fragments = D // FRAG + 4 + (D // FRAG if c["max_first"] else 0)
    return BASE_REGISTERS + D // 2 + 8 * fragments + LOCAL_SCALARS + (0 if c["max_first"] else 1)


def space(w, target) -> Space:
    if not applies(w, target):
        raise WorkloadError(f"attention on tensor cores needs float16 or bfloat16, head_dim a multiple of {FRAG} "
                            f"and {TENSOR_CORES.get(w.dtype, 'WMMA')} tensor cores; got {w.key} on {target.arch}")
    return Space(
        knobs=(
            Knob("warps", (1, 2, 4, 8), "warps of a block, 16 query rows each"),
            Knob("kv_tile", (16, 32, 64, 128), "keys staged in shared memory per step (one rescale per tile)"),
            Knob("pad", (0, 8), "halves added to each shared row against bank conflicts"),
            Knob("max_first", (0, 1), "1: a first pass over the keys finds each row's max, so the second needs no "
                                      "rescale and keeps P V in tensor-core accumulators (the scores twice)"),
        ),
        constraints=(
            Constraint("warps * 16 must not exceed seq_q rounded up to a power of two (at least 16)",
                       lambda c: FRAG * c["warps"] <= max(FRAG, pow2_ceil(w["seq_q"]))),
            Constraint("kv_tile must not exceed seq_kv rounded up to a power of two (at least 16)",
                       lambda c: c["kv_tile"] <= max(FRAG, pow2_ceil(w["seq_kv"]))),
            Constraint(f"the Q, K, V, score, P and staging tiles must fit {target.shared_limit} bytes of shared "
                       f"memory (the device's opt-in limit)", lambda c: shared_bytes(w, c) <= target.shared_limit),
            Constraint(f"head_dim / 2 output columns and (head_dim / 16 + 4, or with max_first 2 head_dim / 16 + 4) "
                       f"fragments of 8 registers must fit {target.max_registers_per_thread} registers per lane",
                       lambda c: registers(w, c) <= target.max_registers_per_thread),
        ),
    )


def default_config(w, target) -> dict:
    """The most warps and the largest key tile that fit, 8 halves of padding (4 warps, 32 keys at head_dim 64)."""
    valid = list(space(w, target))
    padded = [c for c in valid if c["pad"]] or valid
    return max(padded, key=lambda c: (min(c["warps"], 4), min(c["kv_tile"], 64), -c["max_first"]))


def schedule(w, config, target) -> S.Module:
    H, Sq, Skv, D, dt = w["heads"], w["seq_q"], w["seq_kv"], w["head_dim"], w.dtype
    W, T, pad = config["warps"], config["kv_tile"], config["pad"]
    rows, nthreads = FRAG * W, WARP * W
    Q, K, V, O = attention_tensors(w)
    tiles = E.ceil_div(Sq, rows)
    half_cols = D // 2  # output columns of a lane: part, part + 2, ...
    b = IRBuilder()
    with contextlib.ExitStack() as scope:
        def enter(cm):
            return scope.enter_context(cm)

        bx = enter(b.loop("bx", H * tiles, S.ForKind.BLOCK_X))
        tx = enter(b.loop("tx", nthreads, S.ForKind.THREAD_X))
        Qs, Ks, Vs = (enter(b.allocate(name, dt, (n, D), S.Scope.SHARED_DYN, pad, SMEM_ALIGN))
                      for name, n in (("Qs", rows), ("Ks", T), ("Vs", T)))
        Sw = enter(b.allocate("Sw", "float32", (W, FRAG, T), S.Scope.SHARED_DYN, FLOAT_PAD, SMEM_ALIGN))  # scores
        Pw = enter(b.allocate("Pw", dt, (W, FRAG, T), S.Scope.SHARED_DYN, pad, SMEM_ALIGN))  # p in the input type
        Cw = enter(b.allocate("Cw", "float32", (W, FRAG, D), S.Scope.SHARED_DYN, FLOAT_PAD, SMEM_ALIGN))  # P V
        qf = enter(b.allocate("qf", dt, (D // FRAG,), S.Scope.WMMA_A))
        kf = enter(b.allocate("kf", dt, (1,), S.Scope.WMMA_B_COL))
        pf = enter(b.allocate("pf", dt, (1,), S.Scope.WMMA_A))
        vf = enter(b.allocate("vf", dt, (1,), S.Scope.WMMA_B))
        acc = enter(b.allocate("acc", "float32", (1,), S.Scope.WMMA_ACC))
        o = enter(b.allocate("o", "float32", (half_cols,), S.Scope.LOCAL))
        st = enter(b.allocate("st", "float32", (2,), S.Scope.LOCAL))
        h = enter(b.let("h", bx // tiles))
        i0 = enter(b.let("i0", (bx % tiles) * rows))
        warp = enter(b.let("warp", tx // WARP))
        r = enter(b.let("r", (tx % WARP) // 2))
        part = enter(b.let("part", tx % 2))
        i = enter(b.let("i", i0 + warp * FRAG + r))
        _stage(b, Q, Qs, h, i0, Sq, rows, D, nthreads, tx)
        b.barrier()
        for kk in range(D // FRAG):
            b.evaluate(E.call("wmma_load", qf[kk], _at(Qs, (warp * FRAG, kk * FRAG)), D + pad))
        with b.loop("z", half_cols) as z:
            b.store(o, z, E.FloatImm(0.0))
        b.store(st, 0, E.FloatImm(FLOAT_LOWEST))  # running max
        b.store(st, 1, E.FloatImm(0.0))  # running sum of exp(score - max)
        seen = E.min_(Skv, i0 + rows) if w["causal"] else Skv
        steps = (seen + (T - 1)) // T if w["causal"] else E.ceil_div(Skv, T)
        tile = _Tile(b, w, config, K, V, Ks, Vs, Sw, Pw, qf, kf, acc, h, warp, r, part, i, tx)
        if config["max_first"]:
            _max_first(b, tile, steps, Cw, pf, vf, o, st, enter)
        else:
            _online(b, tile, steps, Cw, pf, vf, o, st)
        with b.let("inv", E.FloatImm(1.0) / st[1], "float32") as inv:
            with b.if_(i < Sq) if Sq % rows else contextlib.nullcontext():
                with b.loop("c", half_cols) as c:
                    b.store(O, (h * Sq + i) * D + part + 2 * c, o[c] * inv)
    func = S.PrimFunc("attention_wmma", (Q, K, V, O), b.get())
    return S.Module("attention", (func,), (Q, K, V, O), (), 3)


@dataclasses.dataclass(frozen=True)
class _Tile:
    """What every tile of keys needs: the buffers, fragments and indices of one block's walk."""
    b: IRBuilder
    w: object
    config: dict
    K: S.Buffer
    V: S.Buffer
    Ks: S.Buffer
    Vs: S.Buffer
    Sw: S.Buffer
    Pw: S.Buffer
    qf: S.Buffer
    kf: S.Buffer
    acc: S.Buffer
    h: E.Expr
    warp: E.Expr
    r: E.Expr
    part: E.Expr
    i: E.Expr
    tx: E.Expr

    def stage(self, j0, values: bool) -> None:
        """The tile's keys (and values) into shared memory, then a barrier."""
        w, c = self.w, self.config
        for src, dst in ((self.K, self.Ks), (self.V, self.Vs))[: 2 if values else 1]:
            _stage(self.b, src, dst, self.h, j0, w["seq_kv"], c["kv_tile"], w["head_dim"], WARP * c["warps"], self.tx)
        self.b.barrier()

    def scores(self, j0) -> None:
        """The warp's 16 x kv_tile scores on tensor cores into Sw, a barrier, then scaled and masked in place by the
        lanes of each row; leaves the row's tile max in `self.top` (a LOCAL float the caller allocated)."""
        b, D, T, pad = self.b, self.w["head_dim"], self.config["kv_tile"], self.config["pad"]
        for n in range(T // FRAG):  # 16 keys at a time
            b.evaluate(E.call("wmma_fill", self.acc[0], E.FloatImm(0.0)))
            for kk in range(D // FRAG):
                b.evaluate(E.call("wmma_load", self.kf[0], _at(self.Ks, (n * FRAG, kk * FRAG)), D + pad))
                b.evaluate(E.call("wmma_mma", self.acc[0], self.qf[kk], self.kf[0], self.acc[0]))
            b.evaluate(E.call("wmma_store", _at(self.Sw, (self.warp, 0, n * FRAG)), self.acc[0], T + FLOAT_PAD))
        b.barrier()

    def masked(self, j0, top: S.Buffer | None) -> None:
        """Scale and mask the lane's scores in place; with `top`, top[0] = max(top[0], the row's max over the tile)."""
        b, w, T, Sw = self.b, self.w, self.config["kv_tile"], self.Sw
        with b.loop("t", T // 2) as t, b.let("c", self.part + 2 * t) as c:
            hidden = [j0 + c < w["seq_kv"]] if w["seq_kv"] % T else []
            if w["causal"]:
                hidden.append(j0 + c <= self.i)
            value = Sw[self.warp, self.r, c] * E.FloatImm(scale(w))
            if hidden:
                value = E.select(hidden[0] if len(hidden) == 1 else hidden[0] & hidden[1], value, E.FloatImm(NEG_INF))
            b.store(Sw, (self.warp, self.r, c), value)
            if top is not None:
                b.store(top, 0, E.max_(top[0], Sw[self.warp, self.r, c]))
        if top is not None:
            b.store(top, 0, E.max_(top[0], E.call("shfl_xor", top[0], 1)))

    def probabilities(self, st: S.Buffer) -> None:
        """p = exp(score - st[0]) into Pw, their sum added to st[1] (the two lanes' together), then a barrier."""
        b, T, Sw = self.b, self.config["kv_tile"], self.Sw
        with b.allocate("psum", "float32", (1,), S.Scope.LOCAL) as psum:
            b.store(psum, 0, E.FloatImm(0.0))
            with b.loop("t2", T // 2) as t, b.let("c2", self.part + 2 * t) as c, \
                    b.let("pj", E.call("exp", Sw[self.warp, self.r, c] - st[0]), "float32") as pj:
                b.store(self.Pw, (self.warp, self.r, c), pj)
                b.store(psum, 0, psum[0] + pj)
            b.store(st, 1, st[1] + psum[0] + E.call("shfl_xor", psum[0], 1))
        b.barrier()

    def p_times_v(self, pf, vf, out, n: int) -> None:
        """out += P V for output columns 16n .. 16n + 15 on tensor cores."""
        b, T, D, pad = self.b, self.config["kv_tile"], self.w["head_dim"], self.config["pad"]
        for kk in range(T // FRAG):
            b.evaluate(E.call("wmma_load", pf[0], _at(self.Pw, (self.warp, 0, kk * FRAG)), T + pad))
            b.evaluate(E.call("wmma_load", vf[0], _at(self.Vs, (kk * FRAG, n * FRAG)), D + pad))
            b.evaluate(E.call("wmma_mma", out, pf[0], vf[0], out))


def _online(b: IRBuilder, tile: _Tile, steps, Cw, pf, vf, o, st) -> None:
    """One pass: per tile, the new max, one rescale of the running sum and output registers, P V through the
    warp's staging tile (whose barrier also frees K and V for the next tile's staging)."""
    D, T = tile.w["head_dim"], tile.config["kv_tile"]
    with b.loop("kt", steps) as kt, b.let("j0", kt * T) as j0, \
            b.allocate("tmax", "float32", (1,), S.Scope.LOCAL) as tmax:
        tile.stage(j0, values=True)
        tile.scores(j0)
        b.store(tmax, 0, st[0])
        tile.masked(j0, tmax)
        with b.let("alpha", E.call("exp", st[0] - tmax[0]), "float32") as alpha:
            b.store(st, 0, tmax[0])
            b.store(st, 1, st[1] * alpha)
            with b.loop("z2", D // 2) as z:
                b.store(o, z, o[z] * alpha)
        tile.probabilities(st)
        for n in range(D // FRAG):
            b.evaluate(E.call("wmma_fill", tile.acc[0], E.FloatImm(0.0)))
            tile.p_times_v(pf, vf, tile.acc[0], n)
            b.evaluate(E.call("wmma_store", _at(Cw, (tile.warp, 0, n * FRAG)), tile.acc[0], D + FLOAT_PAD))
        b.barrier()  # also what lets the next tile's staging overwrite K and V: every warp has read them
        with b.loop("c3", D // 2) as c:
            b.store(o, c, o[c] + Cw[tile.warp, tile.r, tile.part + 2 * c])


def _max_first(b: IRBuilder, tile: _Tile, steps, Cw, pf, vf, o, st, enter) -> None:
    """Two passes: the rows' maxima over every key, then p = exp(score - max) with P V accumulated in tensor-core
    fragments across all tiles, stored once through the staging tile at the end."""
    D, T = tile.w["head_dim"], tile.config["kv_tile"]
    with b.loop("kt1", steps) as kt, b.let("j1", kt * T) as j0:
        tile.stage(j0, values=False)
        tile.scores(j0)  # its barrier also frees K for the next staging: every warp has read it
        tile.masked(j0, st)
    out = enter(b.allocate("of", "float32", (D // FRAG,), S.Scope.WMMA_ACC))
    for n in range(D // FRAG):
        b.evaluate(E.call("wmma_fill", out[n], E.FloatImm(0.0)))
    with b.loop("kt", steps) as kt, b.let("j0", kt * T) as j0:
        b.barrier()  # every warp has read the previous tile's K and V
        tile.stage(j0, values=True)
        tile.scores(j0)
        tile.masked(j0, None)
        tile.probabilities(st)
        for n in range(D // FRAG):
            tile.p_times_v(pf, vf, out[n], n)
    for n in range(D // FRAG):
        b.evaluate(E.call("wmma_store", _at(Cw, (tile.warp, 0, n * FRAG)), out[n], D + FLOAT_PAD))
    b.barrier()
    with b.loop("c3", D // 2) as c:
        b.store(o, c, Cw[tile.warp, tile.r, tile.part + 2 * c])


def _at(buf: S.Buffer, indices: tuple) -> E.Address:
    return E.Address(buf, tuple(E.as_expr(x) for x in indices))


CHUNK = 8  # halves a thread moves at once: one 128-bit load and store (head_dim is a multiple of 16)


def _stage(b: IRBuilder, src: S.Buffer, dst: S.Buffer, h, first, extent: int, count: int, D: int, nthreads: int,
           tx) -> None:  # its names carry dst's: a one-pass loop is simplified away, and two stagings share a scope
    """dst[rr, :] = row first + rr of head h of `src` (zeros past `extent`), in 128-bit chunks: consecutive threads,
    consecutive chunks of a row."""
    per_row = D // CHUNK
    chunks = count * per_row
    n = dst.name
    with b.loop(f"p_{n}", E.ceil_div(chunks, nthreads)) as p, b.let(f"e_{n}", p * nthreads + tx) as e:
        guard = b.if_(e < chunks) if chunks % nthreads else contextlib.nullcontext()
        with guard, b.let(f"rr_{n}", e // per_row) as rr, b.let(f"dd_{n}", (e % per_row) * CHUNK) as dd, \
                b.let(f"row_{n}", first + rr) as row:
            def copy():
                with b.loop(f"lv_{n}", CHUNK, S.ForKind.VECTORIZED) as lv:
                    b.store(dst, (rr, dd + lv), src[(h * extent + row) * D + dd + lv])

            if extent % count == 0 and count <= extent:
                copy()
                return
            with b.if_else(row < extent) as otherwise:
                copy()
                otherwise()
                with b.loop(f"lz_{n}", CHUNK, S.ForKind.VECTORIZED) as lz:
                    b.store(dst, (rr, dd + lz), E.cast(src.dtype, E.FloatImm(0.0)))
