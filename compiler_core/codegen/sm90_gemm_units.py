"""What turns the Hopper GEMM kernel (codegen/sm90_gemm.py) into a batched and/or split-K one: the text of its work
units and the slots of its loops that read them.

Without either, the persistent loop walks output tiles and every tile runs the whole K loop (the slots below
render the plain kernel's own text). With them it walks units: unit u is tile u % tiles of batch entry
(u / tiles) % BATCH over K range u / (tiles * BATCH). Tiles run fastest, so the CTAs running at once read one
batch entry's operands over one K range (L2 reuse). K range s is K blocks [s * k_blocks / SPLIT_K,
(s + 1) * k_blocks / SPLIT_K): the ranges differ by at most one block and none is empty where
k_blocks >= SPLIT_K (the space asks for several blocks per split). A unit's tile goes to slice
s * BATCH + batch of C, seen as SPLIT_K x BATCH matrices of M x N: with split-K, C is a float32 workspace that a
second kernel sums over s into the op's output (schedules/cuda/gemm_sm90.py); without, s is 0 and C is the
output itself. Each slice starts 16-byte aligned: N is a multiple of 8 (TMA's row-stride rule).

With split_cluster the K range runs fastest instead: unit u is K range u % SPLIT_K of tile (u / SPLIT_K) % tiles
of batch entry u / (SPLIT_K * tiles), so the SPLIT_K consecutive CTAs of a cluster (one unit each) take one tile's
K ranges, and its output is the batch entry's slice of C itself (the cluster sums the partials; see SPLIT_REDUCE
in codegen/sm90_gemm_text.py).

Batched operands come through 3-D tensor maps, (K, M, batch) and (N, K, batch) innermost first, a box of 1 in
the batch: a box never reaches into the next batch entry, and rows or columns past M, N or K read as zeros.
"""
from __future__ import annotations

UNIT_CONSTANTS = """constexpr int SPLIT_K = {split_k};  // K ranges per tile: float32 partials, summed by a 2nd kernel
constexpr int BATCH = {batch};  // independent GEMMs, the batch coordinate of 3-D tensor maps
"""

_UNIT_OF = """
// A unit of work (sm90_gemm_units.py{kind}): {order_doc}.
struct Unit {
  int tile, batch, split, kb_begin, kb_end;
  size_t c_offset;  // elements from c to the unit's {slice_doc}
};

__device__ __forceinline__ Unit unit_of(int u, const Schedule& s, int M, int N) {
  const int tiles = s.m_tiles * s.n_tiles;
  Unit w;
{order}
  w.kb_begin = w.split * s.k_blocks / SPLIT_K;
  w.kb_end = (w.split + 1) * s.k_blocks / SPLIT_K;
  w.c_offset = {c_offset};
  return w;
}
"""


def _unit_of(**slots: str) -> str:
    """unit_of's text for one order of the units (the template's braces are C++'s, hence replace, not format)."""
    out = _UNIT_OF
    for slot, text in slots.items():
        out = out.replace("{" + slot + "}", text)
    return out


UNIT_OF = _unit_of(kind="", order_doc="the loops' index counts units, tile fastest, then batch, then K range",
                   slice_doc="M x N slice: split * BATCH + batch",
                   order="  w.tile = u % tiles;\n  w.batch = (u / tiles) % BATCH;\n  w.split = u / (tiles * BATCH);",
                   c_offset="(static_cast<size_t>(w.split) * BATCH + w.batch) * M * N")
UNIT_OF_CLUSTER = _unit_of(kind=", split_cluster", order_doc="K range fastest, so a cluster's CTAs share one tile",
                           slice_doc="batch entry of C (the cluster sums the K ranges)",
                           order="  w.split = u % SPLIT_K;\n  w.tile = (u / SPLIT_K) % tiles;\n"
                                 "  w.batch = u / (SPLIT_K * tiles);",
                           c_offset="static_cast<size_t>(w.batch) * M * N")


def strided_loop(units: str) -> str:
    """The persistent loop's head over `units` work units: cluster c of the grid takes units c, c + clusters, ..."""
    return f"for (int tile = sc.first; tile < {units}; tile += sc.step) {{"


# The kernel's parameters, arguments and work of stream-K (codegen/sm90_stream_k.py), empty in every other kernel.
NO_STREAM_K = dict(sk_param="", sk_arg="", sk_kernel_params="")
# The plain kernel's text in each slot: a loop over tiles, each over all of K, storing into c.
PLAIN = dict(loop_head=strided_loop("sc.m_tiles * sc.n_tiles"), unit_line="", tile_of_unit="tile", kb_begin="0",
             kb_end="sc.k_blocks", c_tile="c", unit_helpers="", **NO_STREAM_K)
UNITS = dict(loop_head=strided_loop("sc.m_tiles * sc.n_tiles * BATCH * SPLIT_K"),
             unit_line="const Unit unit = unit_of(tile, sc, M, N);", tile_of_unit="unit.tile",
             kb_begin="unit.kb_begin", kb_end="unit.kb_end", c_tile="c + unit.c_offset", unit_helpers=UNIT_OF,
             **NO_STREAM_K)


def slots(split_k: int, batch: int, split_cluster: bool = False) -> dict:
    """The loop slots of BODY (codegen/sm90_gemm_text.py) for a kernel of `split_k` K ranges over `batch` GEMMs,
    summed by a second kernel or, with `split_cluster`, inside the cluster."""
    if split_cluster:
        return dict(UNITS, unit_helpers=UNIT_OF_CLUSTER)
    return dict(UNITS) if split_k > 1 or batch > 1 else dict(PLAIN)


def constants(split_k: int, batch: int) -> str:
    return UNIT_CONSTANTS.format(split_k=split_k, batch=batch) if split_k > 1 or batch > 1 else ""


def batch_coordinate(batch: int) -> tuple[str, str]:
    """(the TMA loads' dimension, the coordinate they append): 2-D maps, or 3-D with the unit's batch entry."""
    return ("3", ", unit.batch") if batch > 1 else ("2", "")
