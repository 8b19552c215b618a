"""The untuned default config of the SIMT GEMM (gemm_simt): the candidate that a rough time model ranks first.

Candidates are the preferred thread tiles below, each with BK 8, 16 or 32 and split_k 1, 2 or 4 (8 k steps
unrolled, 128-bit loads and double buffering where valid). The model's figures are those of an H100/H200
(132 SMs; the Target carries no SM count yet). It has three terms:

- Math. The busiest SM runs ceil(blocks / SMS) blocks, `resident` of them at once. One k tile of one block
  takes BM*BN*BK FMAs over the SM's FMA rate, divided by how well its thread tile feeds the FMA units (an
  8x8 register tile does 64 FMAs per 4 shared-memory loads, a 1x1 one 1 per 2), and by the share of the
  SM's four warp schedulers its warps can use (fewer than 4 warps leave FMA lanes idle). A k tile can't
  finish faster than TILE_LATENCY_S, the round trip of the next tile's global loads plus the barrier: with
  few blocks on an SM and short k tiles the SM waits. So: rounds * k tiles * max(resident * tile, latency).
- Memory: the inputs and the output cross DRAM at least once.
- split_k: every split writes a partial C that the sum kernel reads back, and a second launch (the partials
  need no memset: each split writes its whole slice).

It ranks configs; its seconds are not a prediction to report. Change the constants only against measurements
(benchmarks/gpu_gemm_f32_shapes.py shows the default beside the best sampled config).
"""
from __future__ import annotations

from compiler_core.errors import ConfigError
from compiler_core.schedules.cuda.gemm_simt import Gemm, Tiling, space
from compiler_core.space import Space

# (BM, BN, TM, TN) the default chooses from, preferred first where the cost model ties. On an H100, float32
# 4096^3 ran at 0.96x cuBLAS with the first, 0.91-0.94x with 64x128 / 128x64 (8x8 per thread), 0.6-0.75x with
# 4x4 or 8x4 thread tiles. The 16-row and 16-column tiles are for skinny problems (M or N <= 16).
PREFERRED_TILES = (
    (128, 128, 8, 8), (64, 128, 8, 8), (128, 64, 8, 8), (64, 64, 8, 8), (64, 64, 4, 4), (32, 128, 4, 8),
    (128, 32, 8, 4), (16, 128, 1, 8), (128, 16, 8, 1), (64, 32, 4, 2), (32, 32, 2, 2), (32, 16, 2, 1),
    (16, 16, 1, 1),
)
MODEL_MARGIN = 0.97  # a later candidate replaces the chosen one only where the model finds it >3% faster
GATHER_PREFERENCE = ("table", "hoist", "div")  # fewest integer instructions per gathered load first
UNROLL = 8  # k steps unrolled: deeper k tiles keep the hot loop's code size of the measured 128x128x8 tile


def default_config(g: Gemm, target) -> dict:
    """The preferred tile, k depth (BK) and split_k that the model estimates fastest."""
    sp, best = space(g, target), None
    for BM, BN, TM, TN in PREFERRED_TILES:
        for split in (1, 2, 4):
            for BK in (8, 16, 32):
                c = _first_valid(sp, dict(BM=BM, BN=BN, BK=BK, TM=TM, TN=TN, pad=4, unroll_k=min(BK, UNROLL),
                                          split_k=split))
                if c is not None:
                    seconds = _estimate(g, Tiling.of(g, c))
                    if best is None or seconds < MODEL_MARGIN * best[0]:
                        best = (seconds, c)
    if best is not None:
        return best[1]
    for config in sp:  # no preferred tile fits: the space's first valid config
        return config
    raise ConfigError(f"no config of the SIMT GEMM ({g.M}x{g.N}x{g.K}) is valid on {target.arch}: the target's "
                      "limits (registers, shared memory, threads) leave none")


def _first_valid(sp: Space, base: dict) -> dict | None:
    """128-bit loads and double buffering where valid; for implicit GEMMs (a `gather` knob), the k table where
    it fits, else the hoisted per-thread part (gemm_simt_gather)."""
    for gather in GATHER_PREFERENCE if "gather" in sp.names else (None,):
        for vec, db in ((4, 1), (1, 1), (4, 0), (1, 0)):
            c = dict(base, vec=vec, double_buffer=db, **({} if gather is None else {"gather": gather}))
            if sp.is_valid(c):
                return c
    return None


def estimate(g: Gemm, config: dict) -> float:
    """The model's seconds for `config` on `g` (a ranking figure, not a prediction to report)."""
    return _estimate(g, Tiling.of(g, config))


def _estimate(g: Gemm, tl: Tiling) -> float:
    return estimated_seconds(
        blocks=g.batch * _ceil(g.M, tl.BM) * _ceil(g.N, tl.BN) * tl.split, k_tiles=tl.tiles_per_split,
        BM=tl.BM, BN=tl.BN, BK=tl.BK, TM=tl.TM, TN=tl.TN, threads=tl.threads, registers=tl.registers,
        shared_bytes=tl.shared_bytes, split=tl.split, out_elems=g.out.size,
        dram_bytes=4 * (g.batch * (g.M * g.K + g.K * g.N) + g.out.size),
        **(dict(warps_per_scheduler=GATHER_WARPS_PER_SCHEDULER, tile_instructions=gather_instructions(g, tl),
                tile_latency_s=GATHER_TILE_LATENCY_S) if g.a.gather or g.b.gather else {}))


def gather_instructions(g: Gemm, tl: Tiling) -> float:
    """Instructions one thread issues per k tile to gather its share of the implicit GEMM's gathered operand (0
    for a plain GEMM): GATHER_INSTRUCTIONS per element."""
    rows = sum(tl.BM if op is g.a else tl.BN for op in (g.a, g.b) if op.gather is not None)
    return rows * tl.BK / tl.threads * GATHER_INSTRUCTIONS


# ---- the time model ----------------------------------------------------------------------
SMS = 132
FMA_PER_SM_S = 128 * 1.75e9  # 128 float32 lanes per SM at about 1.75 GHz under load
DRAM_BYTES_S = 3.0e12
TILE_LATENCY_S = 0.4e-6  # a k tile's load round trip (L2/DRAM) plus its barrier and shared-memory stores
SPLIT_LAUNCH_S = 3e-6  # the sum kernel's launch and its tail
SCHEDULERS_PER_SM = 4  # warp schedulers, each with a quarter of the FMA lanes
# An implicit GEMM's gathered loads are chains (table entry -> address -> load -> guard) whose latency one warp per
# scheduler cannot cover: it takes two. Measured on an H100, conv2d 14x14x256 3x3 float32 (138 configs,
# benchmarks/results/2026-11-25-h100-conv2d_f32_forms_grid.json): blocks of 2 warps ran 1.3x slower than the
# one-warp model said, relative to blocks of 4-8 warps; plain GEMMs showed no such gap (their defaults stand).
GATHER_WARPS_PER_SCHEDULER = 2
THREADS_PER_SM = 2048
REGISTERS_PER_SM = 65536
SHARED_BYTES_PER_SM = 227 * 1024
MAX_BLOCKS_PER_SM = 32
LOOP_OVERHEAD = 4  # instructions per k step besides FMAs and shared loads (indices, loop, fragment moves)
# A gathered k tile's loads wait on a chain (k-table entry -> window address -> load), so the tile's round trip
# is longer than TILE_LATENCY_S, and each gathered element costs instructions (its table entry, the window's
# address and bounds, the load and its shared store). Fitted on the conv2d grid above (67 implicit configs):
# Kendall tau of the model against the measured times rose from 0.22 to 0.46, and its first choice moved from a
# config 17% slower than the best to the best (128x64, BK 16: half the tile round trips of BK 8, the gathered
# operand on the tile's narrow side). Plain GEMMs keep TILE_LATENCY_S and no gather term (defaults unchanged).
GATHER_TILE_LATENCY_S = 1.2e-6
GATHER_INSTRUCTIONS = 4


def thread_tile_efficiency(TM: int, TN: int) -> float:
    """FMAs over all issued instructions of one k step of one thread."""
    shared_loads = -(-TM // 4) + -(-TN // 4)
    return TM * TN / (TM * TN + shared_loads + LOOP_OVERHEAD)


def resident_blocks(threads: int, registers: int, shared_bytes: int) -> int:
    """Blocks one SM holds at once (registers rounded up to the allocation unit of 8 per thread)."""
    regs = -(-registers // 8) * 8
    return max(1, min(THREADS_PER_SM // threads, REGISTERS_PER_SM // (threads * regs),
                      SHARED_BYTES_PER_SM // max(shared_bytes, 1), MAX_BLOCKS_PER_SM))


def estimated_seconds(*, blocks: int, k_tiles: int, BM: int, BN: int, BK: int, TM: int, TN: int, threads: int,
                      registers: int, shared_bytes: int, split: int, dram_bytes: int, out_elems: int,
                      warps_per_scheduler: int = 1, tile_instructions: float = 0.0,
                      tile_latency_s: float = TILE_LATENCY_S) -> float:
    """`blocks`: the whole grid (tiles x batch x split); `k_tiles`: per block; `dram_bytes`: inputs and output
    once; `out_elems`: elements of C (all batches); `warps_per_scheduler`: resident warps a scheduler needs to
    issue every cycle; `tile_instructions`: a thread's instructions per k tile besides its k steps;
    `tile_latency_s`: a k tile's load round trip."""
    per_sm = -(-blocks // SMS)
    resident = min(per_sm, resident_blocks(threads, registers, shared_bytes))
    rounds = -(-per_sm // resident)
    # a warp issues on one scheduler only
    schedulers = min(1.0, resident * threads / 32 / (SCHEDULERS_PER_SM * warps_per_scheduler))
    fmas = TM * TN * BK  # per thread and k tile
    issued = fmas / thread_tile_efficiency(TM, TN) + tile_instructions
    tile_s = BM * BN * BK * issued / fmas / (FMA_PER_SM_S * schedulers)
    math = rounds * k_tiles * max(resident * tile_s, tile_latency_s)
    seconds = max(math, dram_bytes / DRAM_BYTES_S)
    if split > 1:
        seconds += (2 * split + 1) * 4 * out_elems / DRAM_BYTES_S + SPLIT_LAUNCH_S
    return seconds


def _ceil(a: int, b: int) -> int:
    return -(-a // b)
