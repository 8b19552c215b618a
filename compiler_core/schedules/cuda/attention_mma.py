"""CUDA template for float16 and bfloat16 attention on mma.sync tensor cores (sm_80+, head_dim a multiple of 16):
the FlashAttention-2 kernel of codegen/flash_attention.py, whose knobs the farm tunes, handed to the pipeline as an
OpaqueKernel; with kv_splits > 1 the keys of each block are split over several blocks (FlashDecoding) and a second
kernel combines their partial rows, for shapes whose blocks leave SMs idle (a decode step: one query row per head).
"""
from __future__ import annotations

from compiler_core.codegen import flash_attention as fa
from compiler_core.errors import WorkloadError
from compiler_core.ir import stmt as S
from compiler_core.ir.opaque import KernelProfile, OpaqueKernel
from compiler_core.passes.verify_resources import BASE_REGISTERS
from compiler_core.schedules.cuda.attention_splits import (
    SPLIT_CHOICES,
    block_slots,
    fewest_rounds,
    split_constraints,
    split_module,
)
from compiler_core.schedules.cuda.block_reduce import pow2_ceil
from compiler_core.space import Constraint, Knob, Space

FAMILY = "mma_bf16"  # the sm_80 mma.sync generation: m16n8k16 for both half types
MAX_ACCUMULATORS = 192  # float32 registers a lane may hold for O and S (32 query rows a warp, 64-key tiles, d 128)
# The H200's best prefill configs (benchmarks/results/2026-11-29-attention-mma/) hold 32 query rows per warp, so
# each key and value fragment feeds two row fragments; where the accumulators do not fit (head_dim 256), 16.
PREFILL = (dict(warps=4, row_frags=2, kv_tile=64, stages=2), dict(warps=4, row_frags=1, kv_tile=64, stages=2),
           dict(warps=4, row_frags=1, kv_tile=32, stages=2))
# A decode step: one warp, 32-key tiles (smaller blocks: more of them per SM for split_rule's rounds; on the H200
# 16 splits of 32-key tiles was the space's best in three runs, 5 % ahead of 8 splits of 64).
DECODE = (dict(warps=1, row_frags=1, kv_tile=32, stages=2), dict(warps=1, row_frags=1, kv_tile=32, stages=1))


def applies(w, target) -> bool:
    return (w.op == "attention" and w.dtype in fa.ELEM and w["head_dim"] % 16 == 0
            and target.has_tensor_cores(FAMILY))


def flash_config(w, config: dict) -> fa.FlashConfig:
    return fa.FlashConfig(w["heads"], w["seq_q"], w["seq_kv"], w["head_dim"], w["causal"], w.dtype,
                          warps=config["warps"], row_frags=config["row_frags"], kv_tile=config["kv_tile"],
                          stages=config["stages"], kv_splits=config["kv_splits"])


def space(w, target) -> Space:
    if not applies(w, target):
        raise WorkloadError(f"attention on mma.sync tensor cores needs float16 or bfloat16, head_dim a multiple of 16 "
                            f"and sm_80 or later; got {w.key} on {target.arch}")
    rows_cap = max(fa.FRAG_ROWS, pow2_ceil(w["seq_q"]))

    def cfg(c):
        return flash_config(w, c)

    return Space(
        knobs=(
            Knob("warps", (1, 2, 4, 8), "warps of a block, 16 x row_frags query rows each"),
            Knob("row_frags", (1, 2), "16-row fragments of query rows per warp (each key fragment read once for all)"),
            Knob("kv_tile", (32, 64, 128), "keys per step (one rescale per tile)"),
            Knob("stages", (1, 2), "key and value tiles in shared memory (2: the next one loads during this one)"),
            Knob("kv_splits", SPLIT_CHOICES, "blocks sharing a block's keys, each writing partial rows that a second "
                                             "kernel combines (FlashDecoding)"),
        ),
        constraints=(
            Constraint("16 * warps * row_frags query rows must not exceed seq_q rounded up to a power of two "
                       "(at least 16)", lambda c: cfg(c).rows <= rows_cap),
            Constraint("kv_tile must not exceed seq_kv rounded up to a power of two (at least 32)",
                       lambda c: c["kv_tile"] <= max(32, pow2_ceil(w["seq_kv"]))),
            Constraint(f"row_frags * (head_dim + kv_tile) / 2 float32 accumulators per lane must not exceed "
                       f"{MAX_ACCUMULATORS}", lambda c: cfg(c).accumulators <= MAX_ACCUMULATORS),
            Constraint(f"the query, key and value tiles must fit {target.shared_limit} bytes of shared memory (the "
                       f"device's opt-in limit)", lambda c: cfg(c).shared_bytes <= target.shared_limit),
            Constraint("stages 2 only where there are several key tiles",
                       lambda c: c["stages"] == 1 or cfg(c).kv_tiles > 1),
            *split_constraints(w, target, cfg),
        ),
    )


def _registers(cfg: fa.FlashConfig) -> int:
    """A lane's registers, the template's estimate: the accumulators plus addresses, fragments and temporaries."""
    return min(255, cfg.accumulators + 2 * BASE_REGISTERS)


def split_rule(w, base: dict, target, valid) -> int:
    """The split `attention_splits.fewest_rounds` says is fastest for `base`'s blocks. `valid(split)`: the space
    takes it."""
    cfg = flash_config(w, dict(base, kv_splits=1))
    return fewest_rounds(w["heads"] * cfg.q_tiles, cfg.kv_tiles,
                         block_slots(target, cfg.shared_bytes, cfg.threads, _registers(cfg)), valid)


def default_config(w, target) -> dict:
    """The first of PREFILL (a decode step of at most 16 query rows: DECODE) the space takes, with fewer warps where
    the query rows are few and a single buffer where the keys are one tile; the split by split_rule."""
    s = space(w, target)
    for base in (PREFILL if w["seq_q"] > fa.FRAG_ROWS else DECODE):
        config = dict(base, kv_splits=1)
        while 16 * config["warps"] * config["row_frags"] > pow2_ceil(w["seq_q"]) and config["warps"] > 1:
            config["warps"] //= 2
        for stages in (config["stages"], 1):
            if s.is_valid(dict(config, stages=stages)):
                config["stages"] = stages
                config["kv_splits"] = split_rule(w, config, target,
                                                 lambda k, c=config: s.is_valid(dict(c, kv_splits=k)))
                return config
    return next(iter(s))


def schedule(w, config, target) -> S.Module:
    cfg = flash_config(w, config)
    prelude = fa.prelude_blocks(w.dtype)
    return split_module(
        w, target, cfg.kv_splits,
        lambda params: OpaqueKernel(
            name=cfg.name, source=fa.render_kernel(cfg), prelude=prelude, params=params, block=(cfg.threads, 1, 1),
            dynamic_shared_bytes=cfg.shared_bytes, units=cfg.units, sm_count=target.sm_count, requires=(FAMILY,),
            profile=profile(cfg)),
        lambda: (fa.combine_name(cfg), fa.render_combine(cfg), prelude))


def profile(cfg: fa.FlashConfig) -> KernelProfile:
    """The launch's work as the kernel does it: whole query and key tiles (the padding included)."""
    walked, D, rows, T = cfg.tiles_walked, cfg.head_dim, cfg.rows, cfg.kv_tile
    tile_bytes = 2 * T * D * 2  # a tile of keys and one of values
    q_bytes = cfg.heads * cfg.q_tiles * cfg.kv_splits * rows * D * 2
    out_bytes = cfg.heads * cfg.seq_q * D * (2 if cfg.kv_splits == 1 else 4 * cfg.kv_splits + 2)
    return KernelProfile(
        flops=4.0 * walked * rows * T * D,
        global_load_bytes=float(q_bytes + walked * tile_bytes),
        global_store_bytes=float(out_bytes),
        shared_store_bytes=float(q_bytes + walked * tile_bytes),
        # each warp reads its query rows and the whole key and value tiles per tile
        shared_load_bytes=float(walked * (rows * D * 2 + cfg.warps * tile_bytes)),
        mma=float(walked * 2 * (rows // fa.FRAG_ROWS) * (T // 8) * (D // 16)),
        global_accesses=float((q_bytes + walked * tile_bytes + out_bytes) / 16),
        barriers=float(walked * 2 * cfg.threads),
        registers=_registers(cfg),
        tile=(rows, T, D),
        tiles=cfg.units,
        k_steps=-(-cfg.kv_tiles // cfg.kv_splits),
        stages=cfg.stages,
        split_k=cfg.kv_splits,
    )
