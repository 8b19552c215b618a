"""Stream-K for the Hopper GEMM kernel (codegen/sm90_gemm.py): the persistent grid's partly filled last round of
tiles spread evenly over every CTA, so no SM idles while a few finish it.

A persistent grid of G CTAs runs T tiles in ceil(T / G) rounds, and a partly filled last round costs a whole one:
2304 x 2048 in 128 x 192 tiles is 198 tiles, two rounds on 132 SMs, the second half idle. Data-parallel tiles run
first, whole, as before; then the stream-K work, in one of two forms:
- Ranges over K blocks (LINEAR): the last (T mod G) + G tiles' K blocks, tile-major, cut into G even ranges (with
  SK_QUANTA, starting only at multiples of 1/SK_QUANTA of a tile's K). A range crosses a tile boundary at most
  twice. A piece that starts a tile is the tile's own; any other piece is its CTA's first one, and goes to the
  CTA's slot.
- K-major pieces (SPLIT, `sk_split` s): each of the last T mod G tiles cut into s K ranges, the pieces ordered by K
  range first, then tile, and cut into G even runs. The CTAs running together take the same K range of
  neighbouring tiles, so they share A and B panels in L2 as a data-parallel round does. Every range but the last
  goes to a slot of its own; the last range's CTA owns the tile.

An owner adds the partials of its tile (spinning on each one's flag, then lowering it) and stores the tile. A CTA
publishes all it publishes before it waits for anything (LINEAR: its first piece; SPLIT: its run takes the lower K
ranges first), so nothing waits on a waiter, given every CTA is resident: the grid is at most one CTA per SM, and
CTAs past `sk_ctas` (the grid the workspace was sized for) leave at once.

The flags are zero when a launch starts and when it ends (each is raised once and lowered by its reader): the
Module lists them as `kept_zero` (ir/stmt.py), zeroed where allocated, never per launch, since a memset before
each launch would cost about as much as the idle SMs. Partials are stored and loaded through L2 (st.cg / ld.cg),
the flag with release / acquire at GPU scope; each consumer warpgroup has its own partial and flag.
"""
from __future__ import annotations

from compiler_core.codegen import sm90_gemm_units

COMMON = r"""
// ---- stream-K (codegen/sm90_stream_k.py): data-parallel tiles, then the partly filled rounds spread evenly -----
struct StreamKArgs {
  float* partials;  // partial tiles, CONSUMERS per slot: a warpgroup's accumulators, float4s, thread-interleaved
  int* flags;       // one per partial: 1 while it waits for its tile's owner, 0 at rest
  int ctas;         // CTAs taking part (the grid the workspace was sized for); the rest leave at once
};

struct Unit { int tile, kb_begin, kb_end, piece; };  // a tile's K blocks [kb_begin, kb_end); piece: -1 whole-tile

__device__ __forceinline__ float4* sk_partial(const StreamKArgs& a, int slot, int cw) {
  return reinterpret_cast<float4*>(a.partials) + (static_cast<size_t>(slot) * CONSUMERS + cw) * (SLICES * ACC / 4) * 128
         + threadIdx.x % 128;
}

// This warpgroup's accumulators of a piece its tile's owner finishes: to `slot`, then the flag (released after
// every thread's stores: the named barrier orders them before thread 0's release).
__device__ __forceinline__ void sk_publish(float (&acc)[SLICES][ACC], const StreamKArgs& a, int slot, int cw) {
  float4* part = sk_partial(a, slot, cw);
#pragma unroll
  for (int s = 0; s < SLICES; ++s) {
#pragma unroll
    for (int q = 0; q < ACC / 4; ++q) {
      __stcg(part + (s * (ACC / 4) + q) * 128,
             make_float4(acc[s][4 * q], acc[s][4 * q + 1], acc[s][4 * q + 2], acc[s][4 * q + 3]));
    }
  }
  asm volatile("bar.sync %0, 128;" :: "r"(2 + cw) : "memory");
  if (threadIdx.x % 128 == 0) {
    asm volatile("st.release.gpu.global.b32 [%0], %1;" :: "l"(a.flags + slot * CONSUMERS + cw), "r"(1) : "memory");
  }
}

// The owner adds the partial in `slot` once its flag is up, and lowers the flag for the next launch.
__device__ __forceinline__ void sk_add_partial(float (&acc)[SLICES][ACC], const StreamKArgs& a, int slot, int cw) {
  if (threadIdx.x % 128 == 0) {
    int* flag = a.flags + slot * CONSUMERS + cw;
    int up = 0;
    do {
      asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(up) : "l"(flag) : "memory");
    } while (up == 0);
    *flag = 0;
  }
  asm volatile("bar.sync %0, 128;" :: "r"(2 + cw) : "memory");
  const float4* part = sk_partial(a, slot, cw);
#pragma unroll
  for (int s = 0; s < SLICES; ++s) {
#pragma unroll
    for (int q = 0; q < ACC / 4; ++q) {
      const float4 v = __ldcg(part + (s * (ACC / 4) + q) * 128);
      acc[s][4 * q] += v.x; acc[s][4 * q + 1] += v.y; acc[s][4 * q + 2] += v.z; acc[s][4 * q + 3] += v.w;
    }
  }
}

// A CTA's walk: its data-parallel tiles (first, first + ctas, ...), then its share [at, end) of the stream-K work.
struct Cursor { int dp, at, end; };

__device__ __forceinline__ bool cursor_more(const Cursor& c, const StreamK& k) {
  return c.dp < k.dp_tiles || c.at < c.end;
}

__device__ __forceinline__ Cursor cursor_start(const Schedule& s, const StreamK& k) {
  if (s.first >= k.ctas) return {k.dp_tiles, 0, 0};  // past the CTAs the workspace holds: no work
  return {s.first, k.first_share(s.first), k.first_share(s.first + 1)};
}
"""

# Ranges over K blocks: the partial round and the round before it, tile-major, cut into one even range per CTA.
LINEAR = r"""
constexpr int SK_QUANTA = {quanta};  // ranges start at multiples of 1/SK_QUANTA of a tile's K (0: at any K block)

struct StreamK {
  int ctas, dp_tiles, k_blocks, quanta, units;  // CTAs taking part; data-parallel tiles; a tile's K blocks, its
                                                // quanta; the quanta of the stream-K tiles in all
  // The first K block (over the stream-K tiles, tile-major) of CTA g's range: the start of its share of quanta.
  __device__ __forceinline__ int first_share(int g) const {
    const int q = static_cast<int>(static_cast<long long>(g) * units / ctas);
    return q / quanta * k_blocks + q % quanta * k_blocks / quanta;
  }
};

__device__ __forceinline__ StreamK stream_k(const Schedule& s, int ctas) {
  StreamK k;
  const int tiles = s.m_tiles * s.n_tiles;
  k.ctas = min(s.step, ctas);
  const int rest = tiles % k.ctas;
  const int sk_tiles = rest == 0 ? 0 : (tiles > k.ctas ? rest + k.ctas : tiles);
  k.dp_tiles = tiles - sk_tiles;
  k.k_blocks = s.k_blocks;
  k.quanta = SK_QUANTA == 0 ? s.k_blocks : min(SK_QUANTA, s.k_blocks);
  k.units = sk_tiles * k.quanta;
  return k;
}
{common}
// One unit per tile the K blocks touch.
__device__ __forceinline__ Unit cursor_unit(const Cursor& c, const Schedule& s, const StreamK& k) {
  if (c.dp < k.dp_tiles) return {c.dp, 0, s.k_blocks, -1};
  const int kb = c.at % s.k_blocks;
  return {k.dp_tiles + c.at / s.k_blocks, kb, min(s.k_blocks, kb + (c.end - c.at)), 0};
}

__device__ __forceinline__ void cursor_next(Cursor& c, const Unit& w, const StreamK& k) {
  if (c.dp < k.dp_tiles) c.dp += k.ctas;
  else c.at += w.kb_end - w.kb_begin;
}

// A piece that does not start its tile is its CTA's first one: it goes to the CTA's own slot.
__device__ __forceinline__ bool sk_publishes(const StreamK& k, const Unit& w) { return w.kb_begin > 0; }

__device__ __forceinline__ int sk_publish_slot(const StreamK& k, const Schedule& s, const Unit& w) { return s.first; }

// The next CTA after j whose (non-empty) range starts inside the stream-K tile ending at K block `tile_end`: a peer
// holding a partial of that tile; -1 when there is none. Ranges are empty only where the quanta are fewer than the
// CTAs.
__device__ __forceinline__ int sk_peer_after(const StreamK& k, int j, int tile_end) {
  for (++j; j < k.ctas && k.first_share(j) < tile_end; ++j) {
    if (k.first_share(j) < k.first_share(j + 1)) return j;
  }
  return -1;
}

// The slots an owner adds, in turn (-1 after the last): its peers', where its piece stops short of the tile's end.
__device__ __forceinline__ int sk_next_slot(const StreamK& k, const Schedule& s, const Unit& w, int slot) {
  if (w.piece < 0 || w.kb_begin > 0 || w.kb_end == s.k_blocks) return -1;
  return sk_peer_after(k, slot < 0 ? s.first : slot, (w.tile - k.dp_tiles + 1) * s.k_blocks);
}
"""

# K-major pieces of the partial round: each of its tiles cut into SK_SPLIT K ranges, the pieces ordered by K range
# first, then tile, and cut into one even run per CTA. So the CTAs running together take the same K range of
# neighbouring tiles and share their A and B panels in L2, as a data-parallel round does.
SPLIT = r"""
constexpr int SK_SPLIT = {split};  // K ranges per stream-K tile

struct StreamK {
  int ctas, dp_tiles, sk_tiles, splits, pieces;  // CTAs taking part; data-parallel tiles; stream-K tiles, their K
                                                 // ranges; the pieces in all
  // The first piece of CTA g's run.
  __device__ __forceinline__ int first_share(int g) const {
    return static_cast<int>(static_cast<long long>(g) * pieces / ctas);
  }
};

__device__ __forceinline__ StreamK stream_k(const Schedule& s, int ctas) {
  StreamK k;
  const int tiles = s.m_tiles * s.n_tiles;
  k.ctas = min(s.step, ctas);
  k.sk_tiles = tiles % k.ctas;  // the partial round (all the tiles where they are fewer than the CTAs)
  k.dp_tiles = tiles - k.sk_tiles;
  k.splits = min(SK_SPLIT, s.k_blocks);
  k.pieces = k.sk_tiles * k.splits;
  return k;
}
{common}
// Piece p is K range p / sk_tiles of stream-K tile p % sk_tiles.
__device__ __forceinline__ Unit cursor_unit(const Cursor& c, const Schedule& s, const StreamK& k) {
  if (c.dp < k.dp_tiles) return {c.dp, 0, s.k_blocks, -1};
  const int j = c.at / k.sk_tiles;
  return {k.dp_tiles + c.at % k.sk_tiles, j * s.k_blocks / k.splits, (j + 1) * s.k_blocks / k.splits, j};
}

__device__ __forceinline__ void cursor_next(Cursor& c, const Unit& w, const StreamK& k) {
  if (c.dp < k.dp_tiles) c.dp += k.ctas;
  else ++c.at;
}

// Every K range but the last goes to a slot of its own; the last range's CTA owns the tile. A CTA's run takes the
// lower K ranges first, so it publishes all its pieces before it waits for any.
__device__ __forceinline__ bool sk_publishes(const StreamK& k, const Unit& w) {
  return w.piece >= 0 && w.piece < k.splits - 1;
}

__device__ __forceinline__ int sk_publish_slot(const StreamK& k, const Schedule& s, const Unit& w) {
  return (w.tile - k.dp_tiles) * (k.splits - 1) + w.piece;
}

// The slots an owner adds, in turn (-1 after the last): its tile's lower K ranges.
__device__ __forceinline__ int sk_next_slot(const StreamK& k, const Schedule& s, const Unit& w, int slot) {
  if (w.piece != k.splits - 1 || k.splits == 1) return -1;
  const int first = (w.tile - k.dp_tiles) * (k.splits - 1);
  if (slot < 0) return first;
  return slot + 1 < first + k.splits - 1 ? slot + 1 : -1;
}
"""
# After a unit's K loop: a piece another CTA's tile owns goes to the workspace; a tile's own piece adds the partials
# of the others (none for a whole tile) and stores the tile.
EPILOGUE = """if (sk_publishes(skp, unit)) {
      sk_publish(acc, ska, sk_publish_slot(skp, sc, unit), cw);
    } else {
      for (int slot = sk_next_slot(skp, sc, unit, -1); slot >= 0; slot = sk_next_slot(skp, sc, unit, slot)) {
        sk_add_partial(acc, ska, slot, cw);
      }
      store_tile(acc, staging, c, t.m0 + cw * SLICES * 64 + warp * 16, t.n0, M, N, vec_ok);
    }"""


def helpers(quanta: int = 0, split: int = 0) -> str:
    """The stream-K device code: K-major pieces of the partial round where `split` > 0 (K ranges per tile), else
    ranges over K blocks whose starts are multiples of 1/quanta of a tile's K (0: any K block)."""
    if split:
        return SPLIT.replace("{split}", str(split)).replace("{common}", COMMON)
    return LINEAR.replace("{quanta}", str(quanta)).replace("{common}", COMMON)


def partial_slots(tiles: int, ctas: int, split: int, k_blocks: int) -> int:
    """Partial tiles the workspace holds for `tiles` output tiles on `ctas` CTAs: one per CTA for ranges over K
    blocks, one per K range but the last of each partial-round tile for K-major pieces."""
    if not split:
        return ctas
    return (tiles % ctas) * (min(split, k_blocks) - 1)


def slots(quanta: int = 0, split: int = 0) -> dict:
    """BODY's slots (codegen/sm90_gemm_text.py) for a stream-K kernel (`helpers`)."""
    return dict(_SLOTS, unit_helpers=helpers(quanta, split))


_SLOTS = dict(
    sm90_gemm_units.PLAIN,
    loop_head="const StreamK skp = stream_k(sc, ska.ctas);\n  "
              "for (Cursor cur = cursor_start(sc, skp); cursor_more(cur, skp);) {",
    unit_line="const Unit unit = cursor_unit(cur, sc, skp);\n    cursor_next(cur, unit, skp);",
    tile_of_unit="unit.tile", kb_begin="unit.kb_begin", kb_end="unit.kb_end",
    sk_param=", const StreamKArgs& ska", sk_arg=", StreamKArgs{sk_partials, sk_flags, sk_ctas}",
    sk_kernel_params=", float* __restrict__ sk_partials, int* __restrict__ sk_flags, int sk_ctas",
)
