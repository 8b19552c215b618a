"""CPU template for attention: OpenMP over (head, tile of query rows), an online softmax over blocks of keys.

A task holds `q_tile` query rows of one head. For each block of `kv_block` keys it computes the tile's scores (each
key row loaded once for the whole tile, dot products vectorized over head_dim), the block's max per row, rescales
the running sums by exp(old max - new max), and adds p V (each value row loaded once for the tile). The tile's
scores, running max, sum and output rows stay in a few KiB of stack: nothing of seq_q x seq_kv is ever stored.
Query rows past the end of the head (the last tile) load the head's last row and are not stored; keys past the end
(the last block), and under `causal` keys after the query, score -inf. Under `causal` a tile walks only the blocks
that hold a key some of its rows see.

That is the `rows` layout. The `layout` knob's other value, `lanes` (attention_lanes.py), puts one query row in each
vector lane and broadcasts the keys, so no dot product is summed across lanes; there q_tile counts vectors of query
rows, accumulators multiplies the keys (and output columns) a pass takes at once, and vector is pinned to
explicit. A config stored before the knob is of the rows layout (`config_space`).
"""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.ops.attention import scale
from compiler_core.schedules.cpu import attention_lanes
from compiler_core.schedules.cpu import rowloops as R
from compiler_core.space import Constraint, Knob, Space

NEG_INF = float("-inf")
SCORE_FLOATS = 4096  # scores one task keeps (q_tile x kv_block): 16 KiB of stack, within L1 beside a key row


LAYOUTS = ("rows", "lanes")
# The rows layout merges each dot product across the lanes once per key and row, log2(lanes) steps against
# head_dim / lanes FMAs: the wider the vector and the shorter the row, the more the lanes layout saves. Measured
# (see default_config): it pays at every head_dim with 16 and 8 lanes, to 32 with 4.
LANES_LAYOUT_MAX_HEAD_DIM = {16: 1 << 30, 8: 1 << 30, 4: 32}
# The lanes layout's default block: with the default register blocks 1-5 % faster than 32 on 20 of 24 runs of 12
# cases, at most 1 % slower on the others (benchmarks/results/2026-12-02-cpu-attention-blocks/); with one vector and
# one key group 32 had been 3-20 % faster.
LANES_KV_BLOCK = 64
LANES_VECTORS = 2  # the lanes layout's default row vectors per task, where the shape allows (see default_config)


def space(w, target, layout_knob: bool = True) -> Space:
    """`layout_knob=False`: the space before the `layout` knob, whose configs are of the rows layout."""
    lanes = R.lanes_for(target)
    return Space(
        knobs=(
            Knob("q_tile", (1, 2, 4, 8), "query rows (in the lanes layout: vectors of query rows) sharing each key "
                                         "and value row load"),
            Knob("kv_block", (16, 32, 64, 128, 256, 512), "keys per online-softmax step (one rescale per block)"),
            *R.vector_knobs(),
            *((Knob("layout", LAYOUTS, "rows: a task's q_tile rows each sum their dot products across the lanes "
                                       "of head_dim; lanes: one query row per vector lane, keys broadcast"),)
              if layout_knob else ()),
        ),
        constraints=(
            *((Constraint("layout lanes pins vector to explicit (the rows layout's knob)",
                          lambda c: c["layout"] == "rows" or c["vector"] == R.EXPLICIT),
               Constraint(f"layout lanes keeps q_tile x {lanes} x kv_block scores, at most {SCORE_FLOATS}",
                          lambda c: c["layout"] == "rows" or c["q_tile"] * lanes * c["kv_block"] <= SCORE_FLOATS),
               Constraint(f"layout lanes holds q_tile x {attention_lanes.KEYS_AT_ONCE} x accumulators sums, q_tile "
                          f"query vectors and a broadcast in the {target.vector_registers} vector registers",
                          lambda c: c["layout"] == "rows" or attention_lanes.registers_needed(c) <=
                          target.vector_registers),
               Constraint(f"layout lanes with q_tile > 1: q_tile x {lanes} x head_dim outputs, at most "
                          f"{SCORE_FLOATS}, and q_tile x {lanes} rows at most seq_q rounded up to a power of two",
                          lambda c: c["layout"] == "rows" or c["q_tile"] == 1 or (
                              c["q_tile"] * lanes * w["head_dim"] <= SCORE_FLOATS
                              and c["q_tile"] * lanes <= E.pow2_ceil(w["seq_q"]))))
              if layout_knob else ()),
            Constraint(f"q_tile * kv_block <= {SCORE_FLOATS} (the task's scores stay in L1)",
                       lambda c: c["q_tile"] * c["kv_block"] <= SCORE_FLOATS),
            Constraint("kv_block must not exceed seq_kv rounded up to a power of two (at least 16)",
                       lambda c: c["kv_block"] <= max(16, E.pow2_ceil(w["seq_kv"]))),
            Constraint("q_tile must not exceed seq_q rounded up to a power of two",
                       lambda c: c["q_tile"] <= E.pow2_ceil(w["seq_q"])),
        ),
    )


def config_space(w, target, config) -> Space:
    """A config without `layout` was stored before the knob: it is of the rows layout, in the space it came from."""
    return space(w, target, layout_knob=not isinstance(config, dict) or "layout" in config)


def default_config(w, target) -> dict:
    """The lanes layout with 32-key blocks where the query rows fill a vector and its lane merge costs the rows
    layout most (LANES_LAYOUT_MAX_HEAD_DIM); else the rows layout, as for a decode step, whose one query row would
    leave all lanes but one idle (a third as fast). Against the rows layout on one 2-core host compiled for each ISA,
    since broadcasts cost one instruction (benchmarks/results/2026-11-30-cpu-splat/isa-ab-lanes.txt): AVX-512
    1.33-2.95x at head_dim 32-256; AVX2 1.23-1.58x at 32-64, 1.01-1.04x at 96-128; SSE 1.34x at 16, 1.01-1.04x
    at 32, 0.98-1.01x at 64 and 0.78x at 128. (Before that fix AVX2 lost 0.81x at 96-128 and SSE 0.69-0.88x at
    32-128: epyc-2c-isa-ab.txt beside the lanes layout's figures.)"""
    kv = min(64, max(16, E.pow2_ceil(w["seq_kv"])))
    lanes = R.lanes_for(target)
    if w["seq_q"] >= lanes and w["head_dim"] <= LANES_LAYOUT_MAX_HEAD_DIM.get(lanes, 0):
        return _lanes_block(w, target, min(kv, LANES_KV_BLOCK))
    q = min(4, E.pow2_ceil(w["seq_q"]))
    return {"q_tile": q, "kv_block": kv, "vector": R.EXPLICIT, "accumulators": 1, "layout": "rows"}


def _lanes_block(w, target, kv_block: int) -> dict:
    """The lanes layout's register block: two row vectors where the shape allows, each with two key groups (8
    keys at once) where the vector registers hold them, else one. Against one vector and one group (four FMA
    chains, which leaves half of two FMA ports idle behind their latency), 2 threads, head_dim 32-128, seq 100-1024,
    causal or not (benchmarks/results/2026-12-02-cpu-attention-blocks/): AVX-512 (32 registers) two vectors x two
    groups 0.68-0.85x the time, within 0.03 of the fastest block of each case; AVX2 (16) two vectors x one group
    0.71-0.83x, the fastest of each case."""
    allowed = space(w, target)
    blocks = [(q, a) for q in (LANES_VECTORS, 1) for a in (2, 1)]
    configs = [{"q_tile": q, "kv_block": kv_block, "vector": R.EXPLICIT, "accumulators": a, "layout": "lanes"}
               for q, a in blocks]
    return next((c for c in configs if allowed.is_valid(c)), configs[-1])  # one vector, one group: always fits


def schedule(w, config, target) -> S.Module:
    H, Sq, Skv, D, dt = w["heads"], w["seq_q"], w["seq_kv"], w["head_dim"], w.dtype
    qt, kb = config["q_tile"], config["kv_block"]
    Q, K, V = (S.Buffer(f"in_{n}", dt, (H, rows, D)) for n, rows in (("Q", Sq), ("K", Skv), ("V", Skv)))
    O = S.Buffer("out_O", dt, (H, Sq, D))
    b = IRBuilder()
    if config.get("layout", "rows") == "lanes":
        attention_lanes.schedule_body(b, w, config, target, Q, K, V, O)
        return S.Module("attention", (S.PrimFunc("attention_cpu", (Q, K, V, O), b.get()),), (Q, K, V, O), (), 3)
    rl = R.RowLoops(b, config["vector"], R.lanes_for(target), config["accumulators"])
    tiles = E.ceil_div(Sq, qt)
    with b.loop("task", H * tiles, S.ForKind.PARALLEL) as task, \
            b.let("h", task // tiles) as h, b.let("i0", (task % tiles) * qt) as i0, \
            b.allocate("s", "float32", (qt, kb), S.Scope.LOCAL) as s, \
            b.allocate("acc", "float32", (qt, D), S.Scope.LOCAL) as acc, \
            b.allocate("m", "float32", (qt,), S.Scope.LOCAL) as m, \
            b.allocate("l", "float32", (qt,), S.Scope.LOCAL) as l:
        rows = [E.min_(i0 + r, Sq - 1) if Sq % qt else i0 + r for r in range(qt)]  # clamped: loads stay inside
        for r in range(qt):
            b.store(m, r, E.FloatImm(R.FLOAT_LOWEST))
            b.store(l, r, E.FloatImm(0.0))
        with b.loop("z", D) as z:
            for r in range(qt):
                b.store(acc, (r, z), E.FloatImm(0.0))
        seen = E.min_(Skv, i0 + qt) if w["causal"] else Skv  # keys any row of the tile sees
        blocks = (seen + (kb - 1)) // kb if w["causal"] else E.ceil_div(Skv, kb)
        with b.loop("kvb", blocks) as kvb, b.let("j0", kvb * kb) as j0:
            _scores(b, rl, w, Q, K, s, h, j0, rows, kb)
            _online_step(b, rl, w, V, s, acc, m, l, h, j0, kb, D)
        _store(b, rl, O, acc, l, h, i0, rows, Sq, D)
    func = S.PrimFunc("attention_cpu", (Q, K, V, O), b.get())
    return S.Module("attention", (func,), (Q, K, V, O), (), 3)


def _scores(b: IRBuilder, rl: R.RowLoops, w, Q, K, s, h, j0, rows, kb) -> None:
    """s[r, jj] = scale * Q[row r] . K[j0 + jj], -inf for keys past the end or (causal) after the query."""
    Skv, D, qt = w["seq_kv"], w["head_dim"], len(rows)
    with b.loop("jj", kb) as jj, b.let("j", j0 + jj) as j, b.let("jc", E.min_(j, Skv - 1) if Skv % kb else j) as jc:
        def update(rl, st, d, lanes):
            key = rl.bind(rl.load(K, (h, jc, d), lanes))
            return [st[r] + rl.load(Q, (h, rows[r], d), lanes) * key for r in range(qt)]

        dots = R.Reduction(init=(0.0,) * qt, update=update,
                           merge=lambda rl, a, c: [x + y for x, y in zip(a, c, strict=True)])
        with rl.reduce(dots, D) as dot:
            for r in range(qt):
                visible = [j < Skv] if Skv % kb else []
                if w["causal"]:
                    visible.append(j <= rows[r])
                value = dot[r] * E.FloatImm(scale(w))
                if visible:
                    cond = visible[0] if len(visible) == 1 else visible[0] & visible[1]
                    value = E.select(cond, value, E.FloatImm(NEG_INF))
                b.store(s, (r, jj), value)


def _online_step(b: IRBuilder, rl: R.RowLoops, w, V, s, acc, m, l, h, j0, kb, D) -> None:
    """Each row's new max over the block, the rescale of its running sums, then p = exp(s - max) into s, the sum
    of p into l and p V into acc."""
    Skv, qt = w["seq_kv"], s.shape[0]
    for r in range(qt):
        block = R.Reduction(init=(R.FLOAT_LOWEST,),
                            update=lambda rl, st, jj, lanes, r=r: [rl.maximum(st[0], rl.load(s, (r, jj), lanes))],
                            merge=lambda rl, a, c: [rl.maximum(a[0], c[0])])
        with rl.reduce(block, kb) as (top,), b.let(f"mnew{r}", rl.maximum(m[r], top), "float32") as mnew, \
                b.let(f"alpha{r}", E.call("exp", m[r] - mnew), "float32") as alpha:
            b.store(m, r, mnew)
            b.store(l, r, l[r] * alpha)
            rl.map(D, lambda d, lanes, r=r, alpha=alpha: b.store(
                acc, (r, d), rl.load(acc, (r, d), lanes) * rl.splat(alpha, lanes), lanes))
            rl.map(kb, lambda jj, lanes, r=r, mnew=mnew: b.store(
                s, (r, jj), rl.exp(rl.load(s, (r, jj), lanes) - rl.splat(mnew, lanes)), lanes))
            total = R.Reduction(init=(0.0,), update=lambda rl, st, jj, lanes, r=r: [st[0] + rl.load(s, (r, jj), lanes)],
                                merge=lambda rl, a, c: [a[0] + c[0]])
            with rl.reduce(total, kb) as (added,):
                b.store(l, r, l[r] + added)
    valid = E.min_(kb, Skv - j0) if Skv % kb else kb  # p is 0 past the end: skip those value rows
    with b.loop("jv", valid) as jv, b.let("jg", j0 + jv) as jg:
        def emit(d, lanes):
            load = rl.load(V, (h, jg, d), lanes)
            with b.let(rl.name("v"), load, load.dtype) as vrow:  # one load of the value row for the whole tile
                for r in range(qt):
                    b.store(acc, (r, d), rl.load(acc, (r, d), lanes) + rl.splat(s[r, jv], lanes) * vrow, lanes)

        rl.map(D, emit)


def _store(b: IRBuilder, rl: R.RowLoops, O, acc, l, h, i0, rows, Sq, D) -> None:
    """O[row r] = acc[r] / l[r] for the tile's rows inside the head."""
    for r in range(len(rows)):
        with b.let(f"inv{r}", E.FloatImm(1.0) / l[r], "float32") as inv:
            def emit(d, lanes, r=r, inv=inv):
                b.store(O, (h, i0 + r, d), rl.load(acc, (r, d), lanes) * rl.splat(inv, lanes), lanes)

            if Sq % len(rows):
                with b.if_(i0 + r < Sq):
                    rl.map(D, emit)
            else:
                rl.map(D, emit)
