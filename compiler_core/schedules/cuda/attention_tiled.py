"""CUDA template for attention on SIMT lanes with register tiles (any dtype, computed in float32): the kernel of
codegen/flash_attention_simt.py, whose knobs the farm tunes, handed to the pipeline as an OpaqueKernel. It is the
float32 engine (TF32 off leaves no tensor cores for it) and, where a GPU has none, the half types'. With kv_splits > 1
a block's keys split over several blocks and a second kernel combines their partial rows (FlashDecoding, as the
mma.sync engine's: attention_splits), for grids that would leave SMs idle (a decode step: a block per head).
"""
from __future__ import annotations

from compiler_core.codegen import flash_attention_simt as fs
from compiler_core.errors import WorkloadError
from compiler_core.ir import stmt as S
from compiler_core.ir.opaque import KernelProfile, OpaqueKernel
from compiler_core.passes.verify_resources import BASE_REGISTERS
from compiler_core.schedules.cuda.attention_splits import (
    SPLIT_CHOICES,
    block_slots,
    fewest_rounds,
    sms,
    split_constraints,
    split_module,
)
from compiler_core.schedules.cuda.block_reduce import WARP, pow2_ceil
from compiler_core.space import Constraint, Knob, Space

MAX_ACCUMULATORS = 96  # float32 registers a thread may hold for its scores and outputs
# The H200's screens (benchmarks/results/2026-11-30-attention-tiled/). 8 query rows a thread, 16 lanes a row group
# and 64-key tiles were the best of 195 configs on each of three float32 shapes: 128 rows a block, single-buffered,
# without causal where its blocks spread over the SMs as evenly as 64 rows do (`busiest_sm_rows`: d 64 and 128,
# 16-64 heads); 64 double-buffered under causal (the short query tiles fill the last wave) and where 128-row blocks
# leave a wave part-empty (12 x 1500 at d 96: 10 % faster). Where even 64-row blocks leave SMs idle (few heads,
# short queries: 32 heads of 16-128 rows), more, smaller blocks of more threads were 1.5-2.4x faster: 32 rows of 4
# a thread, or from 64 rows down 16 of 2 a thread on 32 lanes (a decode step too: 1.9-3.4x the loop-IR kernel), and
# there the keys split as `attention_splits.fewest_rounds` says (its choice was the fastest split screened on every
# case: a decode step 3.5x faster). Then smaller tiles where the shared memory or registers do not take those.
WIDE = dict(rows_per_block=128, thread_rows=8, threads_per_row=16, kv_tile=64, stages=1, kv_splits=1)
NARROW = dict(rows_per_block=64, thread_rows=8, threads_per_row=16, kv_tile=64, stages=2, kv_splits=1)
FEW_BLOCKS = dict(rows_per_block=32, thread_rows=4, threads_per_row=16, kv_tile=64, stages=2, kv_splits=1)
SHORT = dict(rows_per_block=16, thread_rows=2, threads_per_row=32, kv_tile=64, stages=2, kv_splits=1)
# Above head_dim 128 the tiles above hold more accumulators than a thread has registers for, and the default fell
# back to FEW_BLOCKS (0.55-0.71x of PyTorch at d 192-256). Screens of 288 configs on 13 such shapes on the H200
# (benchmarks/results/2026-11-30-attention-wide-heads/): 16 lanes with 4 rows a thread led up to d 240 (at most 15
# output columns a thread), 32 lanes with 8 rows at d 256 (16 on 16 lanes: 1.4x slower), and 64-row blocks wherever
# they spread the rows over the SMs as evenly as 32-row ones.
WIDE_HEAD, WIDE_HEAD_COLUMNS = 128, 15
FALLBACKS = tuple(dict(rows_per_block=r, thread_rows=m, threads_per_row=l, kv_tile=t, stages=1, kv_splits=1)
                  for r, m, l, t in ((64, 4, 16, 64), (32, 4, 16, 32), (32, 2, 16, 32), (16, 1, 32, 32)))


def applies(w, target) -> bool:
    return w.op == "attention" and w.dtype in fs.TYPES and target.warp_size == WARP


def flash_config(w, config: dict) -> fs.SimtFlashConfig:
    return fs.SimtFlashConfig(w["heads"], w["seq_q"], w["seq_kv"], w["head_dim"], w["causal"], w.dtype,
                              lanes=config["threads_per_row"], rows=config["rows_per_block"],
                              thread_rows=config["thread_rows"], kv_tile=config["kv_tile"], stages=config["stages"],
                              kv_splits=config["kv_splits"])


def space(w, target) -> Space:
    if not applies(w, target):
        raise WorkloadError(f"register-tiled SIMT attention needs float32, float16 or bfloat16 and {WARP}-lane warps; "
                            f"got {w.key} on {target.arch}")

    def cfg(c):
        return flash_config(w, c)

    return Space(
        knobs=(
            Knob("threads_per_row", (4, 8, 16, 32), "lanes sharing a row group: each takes kv_tile / lanes keys of "
                                                    "every tile and head_dim / lanes output columns"),
            Knob("rows_per_block", (16, 32, 64, 128), "query rows of one block"),
            Knob("thread_rows", (1, 2, 4, 8), "query rows each thread computes (its register tile's height)"),
            Knob("kv_tile", (16, 32, 64, 128), "keys per step (one rescale per tile)"),
            Knob("stages", (1, 2), "key and value tiles in shared memory (2: the next one loads during this one, "
                                   "by cp.async)"),
            Knob("kv_splits", SPLIT_CHOICES, "blocks sharing a block's keys, each writing partial rows that a second "
                                             "kernel combines (FlashDecoding)"),
        ),
        constraints=(
            Constraint("thread_rows must divide rows_per_block", lambda c: c["rows_per_block"] % c["thread_rows"] == 0),
            Constraint(f"rows_per_block / thread_rows * threads_per_row threads must be whole warps, "
                       f"{WARP}..{target.max_threads_per_block}",
                       lambda c: WARP <= cfg(c).threads <= target.max_threads_per_block and cfg(c).threads % WARP == 0),
            Constraint("threads_per_row must divide kv_tile", lambda c: c["kv_tile"] % c["threads_per_row"] == 0),
            Constraint("rows_per_block must not exceed seq_q rounded up to a power of two (at least 16)",
                       lambda c: c["rows_per_block"] <= max(16, pow2_ceil(w["seq_q"]))),
            Constraint("kv_tile must not exceed seq_kv rounded up to a power of two (at least 16)",
                       lambda c: c["kv_tile"] <= max(16, pow2_ceil(w["seq_kv"]))),
            Constraint("threads_per_row must not exceed head_dim rounded up to a power of two (at least 4)",
                       lambda c: c["threads_per_row"] <= max(4, pow2_ceil(w["head_dim"]))),
            Constraint(f"thread_rows * (kv_tile + head_dim) / threads_per_row float32 accumulators per thread must not "
                       f"exceed {MAX_ACCUMULATORS}", lambda c: cfg(c).accumulators <= MAX_ACCUMULATORS),
            Constraint(f"the template's register estimate times the block's threads must fit the "
                       f"{target.register_file} registers of a multiprocessor",
                       lambda c: _registers(cfg(c)) * cfg(c).threads <= max(target.register_file, 1)),
            Constraint(f"the query, key, value and probability tiles must fit {target.shared_limit} bytes of shared "
                       f"memory (the device's opt-in limit)", lambda c: cfg(c).shared_bytes <= target.shared_limit),
            Constraint("stages 2 only where cp.async stages the tiles (float32, head_dim a multiple of 4) and there "
                       "are several", lambda c: c["stages"] == 1 or (cfg(c).async_copy and cfg(c).kv_tiles > 1)),
            *split_constraints(w, target, cfg),
        ),
    )


def default_config(w, target) -> dict:
    """The first config the space takes of: where NARROW's blocks would leave SMs idle, SHORT from 64 query rows
    down, else NARROW (FEW_BLOCKS where a wide head takes 32 lanes); else, up to head_dim WIDE_HEAD, NARROW under
    causal, and otherwise WIDE, NARROW or (below 128) FEW_BLOCKS single-buffered (above it NARROW or FEW_BLOCKS),
    whichever spreads the rows most evenly over the SMs (`busiest_sm_rows`); then the next-smaller blocks and
    FALLBACKS. Each takes its `wide_head` form above WIDE_HEAD, fewer query rows a block (and a thread) where the head
    has fewer, double buffering where the space takes it, and the keys split (`split_rule`) where its blocks are
    fewer than the SMs hold."""
    s = space(w, target)
    if w["heads"] * -(-w["seq_q"] // NARROW["rows_per_block"]) < sms(target):
        # 64-row blocks, their keys split (2026-11-30: 1.04-1.37x FEW_BLOCKS' on 11 of 14 such shapes), but 32 rows of
        # 8 a thread where a wide head takes 32 lanes (there 64-row blocks ran 0.89-0.91x on two of three)
        first = SHORT if w["seq_q"] <= NARROW["rows_per_block"] else FEW_BLOCKS if _lanes(w) == 32 else NARROW
    elif w["causal"] and w["head_dim"] <= WIDE_HEAD:
        first = NARROW
    elif w["head_dim"] > WIDE_HEAD:
        few, narrow = (busiest_sm_rows(w, shaped(w, c), target) for c in (FEW_BLOCKS, NARROW))
        first = FEW_BLOCKS if few < narrow else NARROW
    else:  # below head_dim 128, FEW_BLOCKS' 32 rows of 4 a thread too, single-buffered (1.18-1.29x on 6 shapes of d
        # 64-96 where they spread more evenly; at d 128 it ran 0.94x: 8 rows a thread there fill the registers)
        candidates = (WIDE, NARROW, *([dict(FEW_BLOCKS, stages=1)] if w["head_dim"] < WIDE_HEAD else []))
        first = min(candidates, key=lambda c: busiest_sm_rows(w, c, target))  # on a tie the larger blocks
    smaller = (NARROW, FEW_BLOCKS) if first is WIDE else (FEW_BLOCKS, NARROW)  # the next-smaller blocks first
    for base in (first, *smaller, *FALLBACKS):
        config = shaped(w, base)
        while config["rows_per_block"] > max(16, pow2_ceil(w["seq_q"])):
            config["rows_per_block"] //= 2
            config["thread_rows"] = min(config["thread_rows"], config["rows_per_block"] * config["threads_per_row"]
                                        // WARP)
        for stages in (config["stages"], 1):
            if s.is_valid(dict(config, stages=stages, kv_splits=1)):
                config = dict(config, stages=stages, kv_splits=1)
                return dict(config, kv_splits=split_rule(w, config, target,
                                                          lambda k, c=config: s.is_valid(dict(c, kv_splits=k))))
    return next(iter(s))


def shaped(w, base: dict) -> dict:
    """`base` as the head's width takes it (`wide_head` above WIDE_HEAD; SHORT's few rows a thread on 32 lanes as
    they are)."""
    return wide_head(w, base) if w["head_dim"] > WIDE_HEAD and base is not SHORT else dict(base)


def wide_head(w, base: dict) -> dict:
    """`base` for a head_dim above WIDE_HEAD: 16 lanes a row group up to WIDE_HEAD_COLUMNS output columns a thread,
    else 32; the most query rows a thread (8, then 4) whose accumulators fit MAX_ACCUMULATORS."""
    config = dict(base, threads_per_row=max(base["threads_per_row"], _lanes(w)))
    for rows in (8, 4):
        config["thread_rows"] = rows
        if flash_config(w, config).accumulators <= MAX_ACCUMULATORS:
            break
    return config


def _lanes(w) -> int:
    """The lanes of a row group `wide_head` takes: 16 up to WIDE_HEAD_COLUMNS output columns a thread, else 32."""
    return 16 if w["head_dim"] <= 16 * WIDE_HEAD_COLUMNS else 32


def split_rule(w, base: dict, target, valid) -> int:
    """The split `attention_splits.fewest_rounds` says is fastest for `base`'s blocks (those all SMs hold at once
    by shared memory and registers). `valid(split)`: the space takes it."""
    cfg = flash_config(w, base)
    return fewest_rounds(w["heads"] * cfg.q_tiles, cfg.kv_tiles,
                         block_slots(target, cfg.shared_bytes, cfg.threads, _registers(cfg)), valid)


def busiest_sm_rows(w, config: dict, target) -> int:
    """Query rows the busiest SM computes when blocks are dealt out evenly (blocks on one SM share its lanes): the
    launch's time in a throughput-bound model."""
    cfg = flash_config(w, config)
    return -(-cfg.units // sms(target)) * cfg.rows


def _registers(cfg: fs.SimtFlashConfig) -> int:
    """A thread's registers, the template's estimate: accumulators, the read fragments and the row statistics,
    plus addresses and temporaries."""
    return min(255, cfg.accumulators + 4 * (cfg.thread_rows + cfg.score_columns) + 2 * cfg.thread_rows
               + 2 * BASE_REGISTERS)


def schedule(w, config, target) -> S.Module:
    cfg = flash_config(w, config)
    prelude = fs.prelude_blocks()
    return split_module(
        w, target, cfg.kv_splits,
        lambda params: OpaqueKernel(
            name=cfg.name, source=fs.render_kernel(cfg), prelude=prelude, params=params, block=(cfg.threads, 1, 1),
            dynamic_shared_bytes=cfg.shared_bytes, units=cfg.units, sm_count=target.sm_count, requires=(),
            profile=profile(cfg)),
        lambda: (fs.combine_name(cfg), fs.render_combine(cfg), prelude))


def profile(cfg: fs.SimtFlashConfig) -> KernelProfile:
    """The launch's work as the kernel does it: whole query and key tiles (the padding included)."""
    walked, rows, T, D = cfg.tiles_walked, cfg.rows, cfg.kv_tile, cfg.padded_dim
    elem = 4 if cfg.dtype == "float32" else 2
    tile_bytes = 2 * T * cfg.head_dim * elem
    q_bytes = cfg.heads * cfg.q_tiles * rows * cfg.head_dim * elem
    rows_out = cfg.heads * cfg.seq_q * cfg.head_dim
    out_bytes = rows_out * elem if cfg.kv_splits == 1 else rows_out * (4 * cfg.kv_splits + elem)
    threads = cfg.threads
    # per tile each thread reads its query rows and keys over D, then per key its probabilities and values
    reads = threads * (D * (cfg.thread_rows + cfg.score_columns) + T * (cfg.thread_rows + cfg.out_columns)) * 4
    return KernelProfile(
        flops=2.0 * walked * rows * T * (D + threads // (rows // cfg.thread_rows) * cfg.out_columns),
        global_load_bytes=float(q_bytes + walked * tile_bytes),
        global_store_bytes=float(out_bytes),
        shared_store_bytes=float(4 * (cfg.heads * cfg.q_tiles * rows * D + walked * (2 * T * D + T * rows))),
        shared_load_bytes=float(walked * reads),
        mma=0.0,
        global_accesses=float((q_bytes + walked * tile_bytes + out_bytes) / 16),
        barriers=float(walked * 3 * threads),
        registers=_registers(cfg),
        tile=(rows, T, D),
        tiles=cfg.units,
        k_steps=-(-cfg.kv_tiles // cfg.kv_splits),
        stages=cfg.stages,
        split_k=cfg.kv_splits,
    )
