"""The CPU attention template's `lanes` layout: one query row per vector lane, so no dot product is ever summed
across lanes.

A task holds q_tile row vectors of L = the vector width's query rows of one head, transposed once into QT (head_dim
vectors of L rows per row vector). For each block of keys:
- a key's scores for a vector's L rows are one vector, sum over d of QT[d] * broadcast(K[key, d]); a pass takes
  4 x accumulators keys for all the row vectors at once, so each broadcast key value serves every row vector and
  each QT[d] every key of the pass: q_tile x 4 x accumulators independent FMA chains (`chains`), held in registers
  with the row vectors and one broadcast (`registers_needed`, which the space bounds by the target's registers);
- the block's scores are kept key-major, sT[key] = L rows, so each row's max, exp and sum over the keys are plain
  vector operations across keys;
- the outputs stay transposed too, OT[d] = L rows. They are rescaled by exp(old max - new max) and take p V as
  OT[d] += sT[key] * broadcast(V[key, d]), 4 x accumulators columns d at a time for all the row vectors.
At the end each row is divided by its sum and stored, transposed back. One row vector and one key group (four
chains) is the block this layout had first; its code is unchanged.

The `rows` layout (attention.py) instead reduces each row's dot product across the lanes of head_dim: on a 2-core
AVX-512 host that lane merge, once per key and row, was most of its time. Query rows past the end of the head load
its last row and are not stored; keys past the end are not visited; under `causal` the scores of keys after a
row's query are set to -inf in the blocks that cross the diagonal.
"""
from __future__ import annotations

import contextlib
import dataclasses

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.ops.attention import scale
from compiler_core.schedules.cpu import rowloops as R

LOCAL = S.Scope.LOCAL
KEYS_AT_ONCE = 4  # keys whose scores are accumulated together per row vector, times `accumulators`
COLUMNS_AT_ONCE = 4  # output columns updated together in p V per row vector, times `accumulators`


def chains(config) -> int:
    """Independent FMA chains of the larger pass (scores or p V): row vectors x keys (or columns) at once."""
    return config["q_tile"] * max(KEYS_AT_ONCE, COLUMNS_AT_ONCE) * config["accumulators"]


def registers_needed(config) -> int:
    """Vector registers a pass holds: its chains, the row vectors it multiplies and one broadcast."""
    return chains(config) + config["q_tile"] + 1


def schedule_body(b: IRBuilder, w, config, target, Q, K, V, O) -> None:
    """The loop nest of the `lanes` layout over buffers Q, K, V (heads x rows x head_dim) and O."""
    H, Sq, Skv, D = w["heads"], w["seq_q"], w["seq_kv"], w["head_dim"]
    L, kb, nv = R.lanes_for(target), config["kv_block"], config["q_tile"]
    vec = E.with_lanes("float32", L)
    tiles = E.ceil_div(Sq, nv * L)
    with b.loop("task", H * tiles, S.ForKind.PARALLEL) as task, \
            b.let("h", task // tiles) as h, b.let("i0", (task % tiles) * (nv * L)) as i0, \
            b.allocate("qt", vec, (nv * D,), LOCAL) as qt, b.allocate("ot", vec, (nv * D,), LOCAL) as ot, \
            b.allocate("st", vec, (nv * kb,), LOCAL) as st, b.allocate("ml", vec, (2 * nv,), LOCAL) as ml, \
            b.allocate("lane", "float32", (L,), LOCAL) as lane:
        tile = _Tile(nv, L, D, kb, config["accumulators"])
        _load_queries(b, w, Q, qt, lane, h, i0, tile)
        for v in range(nv):
            b.store(ml, 2 * v, E.Broadcast(E.FloatImm(R.FLOAT_LOWEST), L))  # running max of each row
            b.store(ml, 2 * v + 1, E.Broadcast(E.FloatImm(0.0), L))  # running sum of each row
        with b.loop("z", nv * D) as z:
            b.store(ot, z, E.Broadcast(E.FloatImm(0.0), L))
        seen = E.min_(Skv, i0 + nv * L) if w["causal"] else Skv  # keys any row of the tile sees
        blocks = (seen + (kb - 1)) // kb
        with b.loop("kvb", blocks) as kvb, b.let("j0", kvb * kb) as j0, \
                b.let("valid", E.min_(kb, seen - j0)) as valid:
            _scores(b, w, K, qt, st, h, j0, valid, tile)
            if w["causal"]:
                _mask_after_diagonal(b, st, lane, i0, j0, valid, tile)
            _online_step(b, w, V, st, ot, ml, h, j0, valid, tile)
        _store(b, w, O, ot, ml, lane, h, i0, tile)


@contextlib.contextmanager
def _lets(b: IRBuilder, name: str, values: list, dtype: str):
    """One named value per row vector (`name`, or name0, name1, ... with several), loaded once for a pass's FMAs."""
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(b.let(_named(name, v, len(values)), value, dtype))
               for v, value in enumerate(values)]


def _named(name: str, v: int, vectors: int) -> str:
    """A C name per row vector: `name` alone where there is one (the code one vector always had)."""
    return name if vectors == 1 else f"{name}{v}"


def _at(base: int, index):
    """base + index, leaving index alone at base 0 (so one row vector's code is what it was before there were more)."""
    return index if base == 0 else base + index


@dataclasses.dataclass(frozen=True)
class _Tile:
    """A task's shape: `vectors` row vectors of `lanes` query rows; qt, ot (head_dim each) and st (kv_block each)
    hold them vector after vector; a pass works on all of them, `keys` keys (or `columns` columns) at a time."""
    vectors: int
    lanes: int
    head_dim: int
    kv_block: int
    accumulators: int

    @property
    def keys(self) -> int:
        return KEYS_AT_ONCE * self.accumulators

    @property
    def columns(self) -> int:
        return COLUMNS_AT_ONCE * self.accumulators

    def row(self, v: int, r: int, i0):
        """The query row in lane r of row vector v."""
        return i0 + (v * self.lanes + r)


def _load_queries(b: IRBuilder, w, Q, qt, lane, h, i0, tile: _Tile) -> None:
    """qt[v * head_dim + d] = row vector v's query rows at column d (rows past the head: its last row)."""
    Sq = w["seq_q"]
    with b.loop("d", w["head_dim"]) as d:
        for v in range(tile.vectors):
            for r in range(tile.lanes):
                row = E.min_(tile.row(v, r, i0), Sq - 1)
                b.store(lane, r, E.widen(Q[h, row, d]))
            b.store(qt, _at(v * tile.head_dim, d), E.Load(lane, (E.IntImm(0),), tile.lanes))


def _scores(b: IRBuilder, w, K, qt, st, h, j0, valid, tile: _Tile) -> None:
    """st[v * kv_block + jj] = scale * row vector v's rows . K[j0 + jj] for the block's valid keys, `tile.keys`
    keys per pass."""
    D, L, nv, kb = w["head_dim"], tile.lanes, tile.vectors, tile.kv_block
    factor = E.Broadcast(E.FloatImm(scale(w)), L)
    vec = E.with_lanes("float32", L)

    def keys(first, count: int) -> None:
        with b.allocate("sacc", vec, (nv * count,), LOCAL) as acc:
            for a in range(nv * count):
                b.store(acc, a, E.Broadcast(E.FloatImm(0.0), L))
            with b.loop("d", D) as d, _lets(b, "q", [qt[_at(v * D, d)] for v in range(nv)], vec) as qs:
                for k in range(count):
                    key = E.Broadcast(E.widen(K[h, j0 + first + k, d]), L)
                    for v in range(nv):
                        b.store(acc, _at(v * count, k), acc[_at(v * count, k)] + qs[v] * key)
            for v in range(nv):
                for k in range(count):
                    b.store(st, _at(v * kb, first + k), acc[_at(v * count, k)] * factor)

    with b.loop("jg", valid // tile.keys) as jg:
        keys(jg * tile.keys, tile.keys)
    with b.loop("jt", valid % tile.keys) as jt:
        keys(valid // tile.keys * tile.keys + jt, 1)


def _mask_after_diagonal(b: IRBuilder, st, lane, i0, j0, valid, tile: _Tile) -> None:
    """Causal: the score of key j for a row is -inf where j is after the row (only blocks crossing the diagonal)."""
    L = tile.lanes
    with b.if_(j0 + valid - 1 > i0):
        with b.loop("jj", valid) as jj:
            for v in range(tile.vectors):
                slot = _at(v * tile.kv_block, jj)
                b.store(lane, 0, st[slot], L)
                for r in range(L):
                    b.store(lane, r, E.select(j0 + jj > tile.row(v, r, i0), E.FloatImm(float("-inf")), lane[r]))
                b.store(st, slot, E.Load(lane, (E.IntImm(0),), L))


def _online_step(b: IRBuilder, w, V, st, ot, ml, h, j0, valid, tile: _Tile) -> None:
    """Each row's new max over the block's keys, the rescale of its running sum and outputs, p = exp(s - max) in
    place, its sum, then p V."""
    D, L, nv, kb = w["head_dim"], tile.lanes, tile.vectors, tile.kv_block
    vec = E.with_lanes("float32", L)
    for v in range(nv):
        with b.allocate(_named("top", v, nv), vec, (1,), LOCAL) as top:
            b.store(top, 0, ml[2 * v])
            with b.loop("jj", valid) as jj:
                b.store(top, 0, E.max_(top[0], st[_at(v * kb, jj)]))
            with b.let(_named("alpha", v, nv), E.call("exp", ml[2 * v] - top[0], dtype=vec), vec) as alpha, \
                    b.let(_named("mnew", v, nv), top[0], vec) as mnew:
                b.store(ml, 2 * v, mnew)
                with b.loop("z", D) as z:
                    b.store(ot, _at(v * D, z), ot[_at(v * D, z)] * alpha)
                b.store(top, 0, ml[2 * v + 1] * alpha)
                with b.loop("jj", valid) as jj:
                    b.store(st, _at(v * kb, jj), E.call("exp", st[_at(v * kb, jj)] - mnew, dtype=vec))
                    b.store(top, 0, top[0] + st[_at(v * kb, jj)])
                b.store(ml, 2 * v + 1, top[0])

    def columns(first, count: int) -> None:
        with b.allocate("oacc", vec, (nv * count,), LOCAL) as acc:
            for v in range(nv):
                for c in range(count):
                    b.store(acc, _at(v * count, c), ot[_at(v * D, first + c)])
            with b.loop("jv", valid) as jv, _lets(b, "p", [st[_at(v * kb, jv)] for v in range(nv)], vec) as ps:
                for c in range(count):
                    value = E.Broadcast(E.widen(V[h, j0 + jv, first + c]), L)
                    for v in range(nv):
                        b.store(acc, _at(v * count, c), acc[_at(v * count, c)] + ps[v] * value)
            for v in range(nv):
                for c in range(count):
                    b.store(ot, _at(v * D, first + c), acc[_at(v * count, c)])

    with b.loop("dg", D // tile.columns) as dg:
        columns(dg * tile.columns, tile.columns)
    for t in range(D % tile.columns):
        columns(E.IntImm(D // tile.columns * tile.columns + t), 1)


def _store(b: IRBuilder, w, O, ot, ml, lane, h, i0, tile: _Tile) -> None:
    """O[row] = the row's outputs over its sum, for the tile's rows inside the head."""
    Sq, D, L = w["seq_q"], w["head_dim"], tile.lanes
    vec = E.with_lanes("float32", L)
    for v in range(tile.vectors):
        with b.let(_named("inv", v, tile.vectors), E.Broadcast(E.FloatImm(1.0), L) / ml[2 * v + 1], vec) as inv:
            with b.loop("d", D) as d:
                b.store(lane, 0, ot[_at(v * D, d)] * inv, L)
                for r in range(L):
                    store = lambda r=r, v=v: b.store(O, (h, tile.row(v, r, i0), d), lane[r])  # noqa: E731
                    if Sq % (tile.vectors * L):
                        with b.if_(tile.row(v, r, i0) < Sq):
                            store()
                    else:
                        store()
