"""CUDA template for float16 and bfloat16 attention on Hopper's wgmma tensor cores (sm_90a, head_dim 64-256 in
steps of 16): the TMA + wgmma kernel of codegen/flash_attention_sm90.py, whose knobs the farm tunes, handed to the
pipeline as an OpaqueKernel. It has no split of the keys: a decode step (a few query rows per head) stays on
mma.sync (attention_mma.py), whose blocks of 16 rows and split-KV suit it.
"""
from __future__ import annotations

from compiler_core.codegen import flash_attention_sm90 as fa3
from compiler_core.codegen.flash_attention import ELEM
from compiler_core.errors import WorkloadError
from compiler_core.ir import stmt as S
from compiler_core.ir.opaque import KernelProfile, OpaqueKernel, TensorMapParam
from compiler_core.runtime.tensor_map import row_major
from compiler_core.schedules.cuda.attention_tensors import attention_tensors
from compiler_core.schedules.cuda.block_reduce import pow2_ceil
from compiler_core.space import Constraint, Knob, Space
from compiler_core.target import NOMINAL_SM_COUNT

FAMILY = "wgmma"
WG_ROWS = fa3.WG_ROWS  # query rows of a consumer warpgroup
HEAD_DIMS = (64, 256)  # head_dim's range: a 64-column box at least, and wgmma's N (O = P V) at most
# The first the space takes (where registers or shared memory do not fit one, the next). The H200's screens
# (benchmarks/results/2026-11-29-attention-wgmma/): 2 consumers taking turns on 128-key tiles was the best config of
# 3 of 5 shapes' spaces (ping-pong: +5-13 % there; on 64-key tiles it lost 0-4 %); fold gained 1-6 % on 7 of 8 shapes.
DEFAULTS = tuple(dict(consumers=c, kv_tile=t, stages=2, overlap=o, pingpong=p, fold=1)
                 for c, t, o, p in ((2, 128, 1, 1), (2, 64, 1, 0), (2, 64, 0, 0), (1, 64, 0, 0)))


def applies(w, target) -> bool:
    return (w.op == "attention" and w.dtype in ELEM and w["head_dim"] % 16 == 0
            and HEAD_DIMS[0] <= w["head_dim"] <= HEAD_DIMS[1] and target.has_tensor_cores(FAMILY))


def flash_config(w, config: dict) -> fa3.Sm90FlashConfig:
    return fa3.Sm90FlashConfig(w["heads"], w["seq_q"], w["seq_kv"], w["head_dim"], w["causal"], w.dtype,
                               consumers=config["consumers"], kv_tile=config["kv_tile"], stages=config["stages"],
                               overlap=config["overlap"], pingpong=config["pingpong"], fold=config["fold"])


def space(w, target) -> Space:
    if not applies(w, target):
        raise WorkloadError(f"attention on wgmma tensor cores needs float16 or bfloat16, head_dim a multiple of 16 "
                            f"in {HEAD_DIMS[0]}..{HEAD_DIMS[1]} and sm_90a; got {w.key} on {target.arch}")

    def cfg(c):
        return flash_config(w, c)

    return Space(
        knobs=(
            Knob("consumers", (1, 2, 3), "consumer warpgroups of a block, 64 query rows each (one more warpgroup "
                                         "issues the TMA loads)"),
            Knob("kv_tile", (64, 96, 128, 192), "keys per step (the N of S = Q K^T; one rescale per tile)"),
            Knob("stages", (1, 2), "key and value tiles in shared memory (2: the next one loads during this one)"),
            Knob("overlap", (0, 1), "a tile's softmax runs while the previous tile's P V is on the tensor cores "
                                    "(FlashAttention-3's pipelining inside a warpgroup; P's registers stay live)"),
            Knob("pingpong", (0, 1), "two consumer warpgroups take turns issuing their products (one's softmax "
                                     "while the other's products run; FlashAttention-3's ping-pong)"),
            Knob("fold", (0, 1), "the scores' scale folds into the exponent's fused multiply-add (one multiply per "
                                 "score fewer; the running max kept unscaled)"),
        ),
        constraints=(
            Constraint("64 * consumers query rows must not exceed seq_q rounded up to a power of two (at least 64)",
                       lambda c: cfg(c).rows <= max(fa3.WG_ROWS, pow2_ceil(w["seq_q"]))),
            Constraint("kv_tile must not exceed seq_kv rounded up to a power of two (at least 64)",
                       lambda c: c["kv_tile"] <= max(64, pow2_ceil(w["seq_kv"]))),
            Constraint(f"(kv_tile + head_dim) / 2 float32 accumulators per lane (and kv_tile / 4 registers of P with "
                       f"overlap) must leave {fa3.REGISTER_OVERHEAD} of a consumer's registers (240 with 1-2 "
                       f"consumers, 160 with 3)",
                       lambda c: cfg(c).accumulators + fa3.REGISTER_OVERHEAD <= cfg(c).consumer_registers),
            Constraint(f"the query, key and value tiles must fit {target.shared_limit} bytes of shared memory (the "
                       f"device's opt-in limit)", lambda c: cfg(c).shared_bytes <= target.shared_limit),
            Constraint("pingpong takes 2 consumers and overlap",
                       lambda c: not c["pingpong"] or (c["consumers"] == 2 and c["overlap"])),
            Constraint("stages 2 only where there are several key tiles",
                       lambda c: c["stages"] == 1 or cfg(c).kv_tiles > 1),
        ),
    )


def default_config(w, target) -> dict:
    """The first of DEFAULTS the space takes, with fewer consumers where the query rows are few or where blocks of
    2 consumers would leave SMs idle (heads x query tiles below the SMs: 1 consumer doubles the blocks), and a single
    buffer where the keys are one tile."""
    s = space(w, target)
    sms = target.sm_count or NOMINAL_SM_COUNT
    for base in DEFAULTS:
        config = dict(base)
        while config["consumers"] > 1 and (64 * config["consumers"] > pow2_ceil(w["seq_q"]) or
                                           flash_config(w, config).units < sms):
            config["consumers"] -= 1
            config["pingpong"] = 0  # turns are between two consumers
        for stages in (config["stages"], 1):
            if s.is_valid(dict(config, stages=stages)):
                return dict(config, stages=stages)
    return next(iter(s))


def schedule(w, config, target) -> S.Module:
    cfg = flash_config(w, config)
    H, Sq, Skv, D, dt = w["heads"], w["seq_q"], w["seq_kv"], w["head_dim"], w.dtype
    Q, K, V, O = attention_tensors(w)
    box = fa3.BOX_COLS
    params = (TensorMapParam(Q, spec=row_major(dt, (H, Sq, D), fa3.WG_ROWS, box)),
              TensorMapParam(K, spec=row_major(dt, (H, Skv, D), cfg.kv_tile, box)),
              TensorMapParam(V, spec=row_major(dt, (H, Skv, D), cfg.kv_tile, box)), O)
    kernel = OpaqueKernel(
        name=cfg.name, source=fa3.render_kernel(cfg), prelude=fa3.prelude_blocks(cfg), params=params,
        block=(cfg.threads, 1, 1), dynamic_shared_bytes=cfg.shared_bytes, units=cfg.units,
        sm_count=target.sm_count, requires=(FAMILY,), profile=profile(cfg))
    return S.Module("attention", (kernel,), (Q, K, V, O), (), 3)


def profile(cfg: fa3.Sm90FlashConfig) -> KernelProfile:
    """The launch's work as the kernel does it: whole query and key tiles (the padding included)."""
    walked, rows, T = cfg.tiles_walked, cfg.rows, cfg.kv_tile
    D = cfg.boxes * fa3.BOX_COLS  # TMA lands whole boxes
    tile_bytes = 2 * T * D * 2  # a tile of keys and one of values
    q_bytes = cfg.units * rows * D * 2
    out_bytes = cfg.heads * cfg.seq_q * cfg.head_dim * 2
    return KernelProfile(
        flops=4.0 * walked * rows * T * cfg.head_dim,
        global_load_bytes=float(q_bytes + walked * tile_bytes),
        global_store_bytes=float(out_bytes),
        shared_store_bytes=float(q_bytes + walked * tile_bytes),
        # each consumer's wgmma reads its query rows and the whole key and value tiles per tile
        shared_load_bytes=float(walked * (rows * D * 2 + cfg.consumers * tile_bytes)),
        mma=float(walked * cfg.consumers * (cfg.head_dim // 16 + T // 16)),
        global_accesses=float(cfg.units * cfg.consumers * cfg.boxes + walked * 2 * cfg.boxes + out_bytes / 4),
        barriers=float(walked * 4 * cfg.threads),
        registers=min(255, cfg.accumulators + fa3.REGISTER_OVERHEAD),
        tile=(rows, T, cfg.head_dim),
        tiles=cfg.units,
        k_steps=cfg.kv_tiles,
        stages=cfg.stages,
    )
