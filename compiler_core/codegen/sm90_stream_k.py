"""Stream-K for the Hopper GEMM kernel (codegen/sm90_gemm.py): the persistent grid's last, partly filled round of
tiles spread evenly over every CTA by K blocks, so no SM idles while a few finish it.

A persistent grid of G CTAs runs T tiles in ceil(T / G) rounds, and a partly filled last round costs a whole one:
2304 x 2048 in 128 x 192 tiles is 198 tiles, two rounds on 132 SMs, the second half idle. With `stream_k`:
- Data-parallel tiles first: all but the last (T mod G) + G tiles run whole, G at a time, as before.
- The stream-K tiles' K blocks, S = (T mod G + G) x k_blocks in all, are cut into G even ranges, CTA g taking
  [g S / G, (g + 1) S / G). At least one tile's worth each, so a range crosses a tile boundary at most twice.
- A CTA walks its range in pieces, one per tile it touches. A piece that starts a tile (K block 0) is the tile's
  own: its CTA finishes and stores the tile. Any other piece is the first one of its CTA's range: that CTA writes
  it as a float32 partial tile to its slot of the workspace and raises its flag.
- The owner of a tile reaches it last (its range ends there), so the partials it waits for were its peers' first
  pieces. It spins on each peer's flag, adds the peer's partial, puts the flag back to 0 and stores the tile.

So nothing waits on anything that waits, and every CTA must be resident at once: the grid is at most one CTA per
SM (the persistent grid), and CTAs past the workspace's `sk_slots` leave at once. The flags are zero when a launch
starts and zero when it ends (each is raised once and lowered by its reader): the Module lists them as
`kept_zero` (ir/stmt.py), zeroed where allocated, never per launch, since a memset before each launch would cost
about as much as the idle SMs. Partials are stored and loaded through L2 (st.cg / ld.cg), the flag with
release / acquire at GPU scope; each consumer warpgroup has its own slot and flag.
"""
from __future__ import annotations

from compiler_core.codegen import sm90_gemm_units

HELPERS = r"""
// ---- stream-K (codegen/sm90_stream_k.py): data-parallel tiles, then the last rounds' K blocks spread evenly ----
struct StreamKArgs {
  float* partials;  // sk_slots x CONSUMERS partial tiles: a warpgroup's accumulators, float4s, thread-interleaved
  int* flags;       // sk_slots x CONSUMERS: 1 while a partial waits for its tile's owner; 0 at rest
  int slots;
};

constexpr int SK_QUANTA = {quanta};  // a tile's K cut into this many equal parts (0: one per K block)

struct StreamK {
  int ctas, dp_tiles, k_blocks, quanta, units;  // CTAs taking part; data-parallel tiles; a tile's K blocks, its
                                                // quanta; the quanta of the stream-K tiles in all
  // The first K block (over the stream-K tiles, tile-major) of CTA g's range: the start of its share of quanta.
  __device__ __forceinline__ int first_iter(int g) const {
    const int q = static_cast<int>(static_cast<long long>(g) * units / ctas);
    return q / quanta * k_blocks + q % quanta * k_blocks / quanta;
  }
};

__device__ __forceinline__ StreamK stream_k(const Schedule& s, int slots) {
  StreamK k;
  const int tiles = s.m_tiles * s.n_tiles;
  k.ctas = min(s.step, slots);
  const int rest = tiles % k.ctas;
  const int sk_tiles = rest == 0 ? 0 : (tiles > k.ctas ? rest + k.ctas : tiles);
  k.dp_tiles = tiles - sk_tiles;
  k.k_blocks = s.k_blocks;
  k.quanta = SK_QUANTA == 0 ? s.k_blocks : min(SK_QUANTA, s.k_blocks);
  k.units = sk_tiles * k.quanta;
  return k;
}

struct Unit { int tile, kb_begin, kb_end; };  // a tile's K blocks [kb_begin, kb_end)

// A CTA's walk: its data-parallel tiles (first, first + ctas, ...), then its K blocks [it, end) of the stream-K
// tiles, one unit per tile they touch.
struct Cursor { int dp, it, end; };

__device__ __forceinline__ Cursor cursor_start(const Schedule& s, const StreamK& k) {
  if (s.first >= k.ctas) return {k.dp_tiles, 0, 0};  // past the workspace's slots: no work
  return {s.first, k.first_iter(s.first), k.first_iter(s.first + 1)};
}

__device__ __forceinline__ bool cursor_more(const Cursor& c, const StreamK& k) {
  return c.dp < k.dp_tiles || c.it < c.end;
}

__device__ __forceinline__ Unit cursor_unit(const Cursor& c, const Schedule& s, const StreamK& k) {
  if (c.dp < k.dp_tiles) return {c.dp, 0, s.k_blocks};
  const int kb = c.it % s.k_blocks;
  return {k.dp_tiles + c.it / s.k_blocks, kb, min(s.k_blocks, kb + (c.end - c.it))};
}

__device__ __forceinline__ void cursor_next(Cursor& c, const Unit& w, const StreamK& k) {
  if (c.dp < k.dp_tiles) c.dp += k.ctas;
  else c.it += w.kb_end - w.kb_begin;
}

__device__ __forceinline__ float4* sk_partial(const StreamKArgs& a, int g, int cw) {
  return reinterpret_cast<float4*>(a.partials) + (static_cast<size_t>(g) * CONSUMERS + cw) * (SLICES * ACC / 4) * 128
         + threadIdx.x % 128;
}

// This warpgroup's accumulators of a piece its tile's owner finishes: to slot g, then the flag (released after
// every thread's stores: the named barrier orders them before thread 0's release).
__device__ __forceinline__ void sk_publish(float (&acc)[SLICES][ACC], const StreamKArgs& a, int g, int cw) {
  float4* slot = sk_partial(a, g, cw);
#pragma unroll
  for (int s = 0; s < SLICES; ++s) {
#pragma unroll
    for (int q = 0; q < ACC / 4; ++q) {
      __stcg(slot + (s * (ACC / 4) + q) * 128,
             make_float4(acc[s][4 * q], acc[s][4 * q + 1], acc[s][4 * q + 2], acc[s][4 * q + 3]));
    }
  }
  asm volatile("bar.sync %0, 128;" :: "r"(2 + cw) : "memory");
  if (threadIdx.x % 128 == 0) {
    asm volatile("st.release.gpu.global.b32 [%0], %1;" :: "l"(a.flags + g * CONSUMERS + cw), "r"(1) : "memory");
  }
}

// The next CTA after j whose (non-empty) range starts inside the stream-K tile ending at K block `tile_end` of the
// stream-K blocks: a peer holding a partial of that tile; -1 when there is none. Ranges are empty only where the
// K blocks are fewer than the CTAs.
__device__ __forceinline__ int sk_peer_after(const StreamK& k, int j, int tile_end) {
  for (++j; j < k.ctas && k.first_iter(j) < tile_end; ++j) {
    if (k.first_iter(j) < k.first_iter(j + 1)) return j;
  }
  return -1;
}

// The owner of `w`'s tile adds the partials of the CTAs whose ranges start inside the tile, waiting for each flag,
// and lowers it for the next launch.
__device__ __forceinline__ void sk_gather(float (&acc)[SLICES][ACC], const StreamKArgs& a, const Schedule& s,
                                          const StreamK& k, const Unit& w, int cw) {
  const int tile_end = (w.tile - k.dp_tiles + 1) * s.k_blocks;
  for (int j = sk_peer_after(k, s.first, tile_end); j >= 0; j = sk_peer_after(k, j, tile_end)) {
    if (threadIdx.x % 128 == 0) {
      int* flag = a.flags + j * CONSUMERS + cw;
      int up = 0;
      do {
        asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(up) : "l"(flag) : "memory");
      } while (up == 0);
      *flag = 0;
    }
    asm volatile("bar.sync %0, 128;" :: "r"(2 + cw) : "memory");
    const float4* slot = sk_partial(a, j, cw);
#pragma unroll
    for (int s = 0; s < SLICES; ++s) {
#pragma unroll
      for (int q = 0; q < ACC / 4; ++q) {
        const float4 v = __ldcg(slot + (s * (ACC / 4) + q) * 128);
        acc[s][4 * q] += v.x; acc[s][4 * q + 1] += v.y; acc[s][4 * q + 2] += v.z; acc[s][4 * q + 3] += v.w;
      }
    }
  }
}
"""

# After a unit's K loop: a piece of another CTA's tile goes to the workspace, a tile's own piece gathers the rest.
EPILOGUE = """if (unit.kb_begin > 0) {
      sk_publish(acc, ska, sc.first, cw);
    } else {
      if (unit.kb_end < sc.k_blocks) sk_gather(acc, ska, sc, skp, unit, cw);
      store_tile(acc, staging, c, t.m0 + cw * SLICES * 64 + warp * 16, t.n0, M, N, vec_ok);
    }"""

def slots(quanta: int) -> dict:
    """BODY's slots (codegen/sm90_gemm_text.py) for a stream-K kernel whose ranges start at multiples of 1/quanta
    of a tile's K (0: at any K block)."""
    return dict(_SLOTS, unit_helpers=HELPERS.replace("{quanta}", str(quanta)))


_SLOTS = dict(
    sm90_gemm_units.PLAIN,
    loop_head="const StreamK skp = stream_k(sc, ska.slots);\n  "
              "for (Cursor cur = cursor_start(sc, skp); cursor_more(cur, skp);) {",
    unit_line="const Unit unit = cursor_unit(cur, sc, skp);\n    cursor_next(cur, unit, skp);",
    tile_of_unit="unit.tile", kb_begin="unit.kb_begin", kb_end="unit.kb_end", unit_helpers=HELPERS,
    sk_param=", const StreamKArgs& ska", sk_arg=", StreamKArgs{sk_partials, sk_flags, sk_slots}",
    sk_kernel_params=", float* __restrict__ sk_partials, int* __restrict__ sk_flags, int sk_slots",
)
