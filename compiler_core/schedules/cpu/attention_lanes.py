"""The CPU attention template's `lanes` layout: one query row per vector lane, so no dot product is ever summed
across lanes.

A task holds L = the vector width's query rows of one head, transposed once into QT (head_dim vectors of L rows).
For each block of keys:
- a key's scores for the L rows are one vector, sum over d of QT[d] * broadcast(K[key, d]), four keys at a time
  (four independent accumulators);
- the block's scores are kept key-major, sT[key] = L rows, so each row's max, exp and sum over the keys are plain
  vector operations across keys;
- the outputs stay transposed too, OT[d] = L rows. They are rescaled by exp(old max - new max) and take p V as
  OT[d] += sT[key] * broadcast(V[key, d]), four columns d at a time.
At the end each row is divided by its sum and stored, transposed back.

The `rows` layout (attention.py) instead reduces each row's dot product across the lanes of head_dim: on a 2-core
AVX-512 host that lane merge, once per key and row, was most of its time. Query rows past the end of the head load
its last row and are not stored; keys past the end are not visited; under `causal` the scores of keys after a
row's query are set to -inf in the blocks that cross the diagonal.
"""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.ops.attention import scale
from compiler_core.schedules.cpu import rowloops as R

LOCAL = S.Scope.LOCAL
KEYS_AT_ONCE = 4  # keys whose scores are accumulated together (independent FMA chains)
COLUMNS_AT_ONCE = 4  # output columns updated together in p V


def schedule_body(b: IRBuilder, w, config, target, Q, K, V, O) -> None:
    """The loop nest of the `lanes` layout over buffers Q, K, V (heads x rows x head_dim) and O."""
    H, Sq, Skv, D = w["heads"], w["seq_q"], w["seq_kv"], w["head_dim"]
    L, kb = R.lanes_for(target), config["kv_block"]
    vec = E.with_lanes("float32", L)
    tiles = E.ceil_div(Sq, L)
    with b.loop("task", H * tiles, S.ForKind.PARALLEL) as task, \
            b.let("h", task // tiles) as h, b.let("i0", (task % tiles) * L) as i0, \
            b.allocate("qt", vec, (D,), LOCAL) as qt, b.allocate("ot", vec, (D,), LOCAL) as ot, \
            b.allocate("st", vec, (kb,), LOCAL) as st, b.allocate("ml", vec, (2,), LOCAL) as ml, \
            b.allocate("lane", "float32", (L,), LOCAL) as lane:
        _load_queries(b, w, Q, qt, lane, h, i0, L)
        b.store(ml, 0, E.Broadcast(E.FloatImm(R.FLOAT_LOWEST), L))  # running max of each row
        b.store(ml, 1, E.Broadcast(E.FloatImm(0.0), L))  # running sum of each row
        with b.loop("z", D) as z:
            b.store(ot, z, E.Broadcast(E.FloatImm(0.0), L))
        seen = E.min_(Skv, i0 + L) if w["causal"] else Skv  # keys any row of the tile sees
        blocks = (seen + (kb - 1)) // kb
        with b.loop("kvb", blocks) as kvb, b.let("j0", kvb * kb) as j0, \
                b.let("valid", E.min_(kb, seen - j0)) as valid:
            _scores(b, w, K, qt, st, h, j0, valid, L)
            if w["causal"]:
                _mask_after_diagonal(b, st, lane, i0, j0, valid, L)
            _online_step(b, w, V, st, ot, ml, h, j0, valid, L)
        _store(b, w, O, ot, ml, lane, h, i0, L)


def _load_queries(b: IRBuilder, w, Q, qt, lane, h, i0, L: int) -> None:
    """qt[d] = the tile's L query rows at column d (rows past the head: its last row)."""
    Sq = w["seq_q"]
    with b.loop("d", w["head_dim"]) as d:
        for r in range(L):
            row = E.min_(i0 + r, Sq - 1)
            b.store(lane, r, E.widen(Q[h, row, d]))
        b.store(qt, d, E.Load(lane, (E.IntImm(0),), L))


def _scores(b: IRBuilder, w, K, qt, st, h, j0, valid, L: int) -> None:
    """st[jj] = scale * the tile's rows . K[j0 + jj] for the block's valid keys, KEYS_AT_ONCE keys per pass."""
    D, factor = w["head_dim"], E.Broadcast(E.FloatImm(scale(w)), L)
    vec = E.with_lanes("float32", L)

    def keys(first, count: int) -> None:
        with b.allocate("sacc", vec, (count,), LOCAL) as acc:
            for k in range(count):
                b.store(acc, k, E.Broadcast(E.FloatImm(0.0), L))
            with b.loop("d", D) as d, b.let("q", qt[d], vec) as q:
                for k in range(count):
                    b.store(acc, k, acc[k] + q * E.Broadcast(E.widen(K[h, j0 + first + k, d]), L))
            for k in range(count):
                b.store(st, first + k, acc[k] * factor)

    with b.loop("jg", valid // KEYS_AT_ONCE) as jg:
        keys(jg * KEYS_AT_ONCE, KEYS_AT_ONCE)
    with b.loop("jt", valid % KEYS_AT_ONCE) as jt:
        keys(valid // KEYS_AT_ONCE * KEYS_AT_ONCE + jt, 1)


def _mask_after_diagonal(b: IRBuilder, st, lane, i0, j0, valid, L: int) -> None:
    """Causal: the score of key j for row i0 + r is -inf where j > i0 + r (only blocks crossing the diagonal)."""
    with b.if_(j0 + valid - 1 > i0):
        with b.loop("jj", valid) as jj:
            b.store(lane, 0, st[jj], L)
            for r in range(L):
                b.store(lane, r, E.select(j0 + jj > i0 + r, E.FloatImm(float("-inf")), lane[r]))
            b.store(st, jj, E.Load(lane, (E.IntImm(0),), L))


def _online_step(b: IRBuilder, w, V, st, ot, ml, h, j0, valid, L: int) -> None:
    """Each row's new max over the block's keys, the rescale of its running sum and outputs, p = exp(s - max) in
    place, its sum, then p V."""
    D = w["head_dim"]
    vec = E.with_lanes("float32", L)
    with b.allocate("top", vec, (1,), LOCAL) as top:
        b.store(top, 0, ml[0])
        with b.loop("jj", valid) as jj:
            b.store(top, 0, E.max_(top[0], st[jj]))
        with b.let("alpha", E.call("exp", ml[0] - top[0], dtype=vec), vec) as alpha, \
                b.let("mnew", top[0], vec) as mnew:
            b.store(ml, 0, mnew)
            with b.loop("z", D) as z:
                b.store(ot, z, ot[z] * alpha)
            b.store(top, 0, ml[1] * alpha)
            with b.loop("jj", valid) as jj:
                b.store(st, jj, E.call("exp", st[jj] - mnew, dtype=vec))
                b.store(top, 0, top[0] + st[jj])
            b.store(ml, 1, top[0])

    def columns(first, count: int) -> None:
        with b.allocate("oacc", vec, (count,), LOCAL) as acc:
            for c in range(count):
                b.store(acc, c, ot[first + c])
            with b.loop("jv", valid) as jv, b.let("p", st[jv], vec) as p:
                for c in range(count):
                    b.store(acc, c, acc[c] + p * E.Broadcast(E.widen(V[h, j0 + jv, first + c]), L))
            for c in range(count):
                b.store(ot, first + c, acc[c])

    with b.loop("dg", D // COLUMNS_AT_ONCE) as dg:
        columns(dg * COLUMNS_AT_ONCE, COLUMNS_AT_ONCE)
    for t in range(D % COLUMNS_AT_ONCE):
        columns(E.IntImm(D // COLUMNS_AT_ONCE * COLUMNS_AT_ONCE + t), 1)


def _store(b: IRBuilder, w, O, ot, ml, lane, h, i0, L: int) -> None:
    """O[i0 + r] = the row's outputs over its sum, for the tile's rows inside the head."""
    Sq = w["seq_q"]
    vec = E.with_lanes("float32", L)
    with b.let("inv", E.Broadcast(E.FloatImm(1.0), L) / ml[1], vec) as inv:
        with b.loop("d", w["head_dim"]) as d:
            b.store(lane, 0, ot[d] * inv, L)
            for r in range(L):
                store = lambda r=r: b.store(O, (h, i0 + r, d), lane[r])  # noqa: E731
                if Sq % L:
                    with b.if_(i0 + r < Sq):
                        store()
                else:
                    store()
