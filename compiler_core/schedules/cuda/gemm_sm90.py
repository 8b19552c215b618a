"""CUDA template for float16 and bfloat16 matmul on Hopper (sm_90a): the TMA + mbarrier + wgmma kernel of
codegen/sm90_gemm.py, whose knobs the farm tunes, handed to the pipeline as an OpaqueKernel (ir/opaque.py).

Where it applies (`applies`): matmul, float16 or bfloat16, a target whose tensor cores include "wgmma", and row
strides TMA can map: A (M x K) and B (K x N) are row-major, so K and N must be multiples of 8 halves (16 bytes).
Elsewhere half matmuls stay on WMMA (gemm_wmma.py), which is exact for any shape; so does batch_matmul, whose 3-D
tensor maps the kernel does not take yet. Edge tiles need no guard here: TMA fills out-of-bounds elements with
zeros and the epilogue masks its stores, so every M, N and K (multiples of 8 for the last two) is exact.

C is the op's output (the inputs' dtype) and B is taken as the op gives it (K x N, N-major): `out` and
`b_kmajor` are fixed.
"""
from __future__ import annotations

from compiler_core.codegen import sm90_gemm
from compiler_core.codegen.sm90_gemm import HopperGemmConfig
from compiler_core.errors import ConfigError, WorkloadError
from compiler_core.ir import stmt as S
from compiler_core.ir.expr import HALF_TYPES
from compiler_core.ir.opaque import KernelProfile, OpaqueKernel, ScalarParam, TensorMapParam
from compiler_core.passes.verify_resources import BASE_REGISTERS
from compiler_core.space import Constraint, Knob, Space
from compiler_core.target import NOMINAL_SM_COUNT

TMA_ALIGN_ELEMS = 8  # 16-byte row strides of 2-byte elements
TILE_CHOICES = (64, 128, 256)  # bm: whole m64 wgmma slices; bn: the wgmma N, in 64-column B boxes
LARGE = dict(bm=128, bn=256, stages=4, consumers=2)  # the probe's best at 4096^3 (1.01x cuBLAS on an H100)
SMALL = dict(bm=64, bn=128, stages=6, consumers=1)  # the probe's best at 1024^3, where LARGE leaves SMs idle


def applies(w, target) -> bool:
    """Whether matmul dispatches `w` here (see the module docstring)."""
    return (w.op == "matmul" and w.dtype in HALF_TYPES and target.has_tensor_cores("wgmma")
            and w["K"] % TMA_ALIGN_ELEMS == 0 and w["N"] % TMA_ALIGN_ELEMS == 0)


def hopper_config(config: dict) -> HopperGemmConfig:
    """The kernel's knobs from a config of this space (the op fixes bk, out and b_kmajor)."""
    return HopperGemmConfig(bm=config["bm"], bn=config["bn"], stages=config["stages"], consumers=config["consumers"],
                            persistent=config["persistent"], group_m=config["group_m"], cluster=config["cluster"])


def _kernel_ok(config: dict) -> bool:
    try:
        sm90_gemm.check(hopper_config(config), "float16")  # the rules count bytes: bfloat16's are float16's
    except ConfigError:
        return False
    return True


def covering(choices: tuple, extent: int) -> int:
    """The smallest tile choice that covers `extent` (the largest if none does)."""
    return min((c for c in choices if c >= extent), default=max(choices))


def tiles(M: int, N: int, config: dict) -> tuple[int, int]:
    """(tile rows, tile columns) of CTA tiles."""
    return -(-M // config["bm"]), -(-N // config["bn"])


# ---- space ---------------------------------------------------------------------------------------
# The knobs and rules every space over this kernel has (matmul here, conv2d_sm90's implicit GEMM): a space adds its
# tile knobs first and any knob of its own after.
RING_KNOBS = (
    Knob("stages", (2, 3, 4, 5, 6, 7, 8), "shared-memory ring stages of A and B boxes (TMA in flight)"),
    Knob("consumers", (1, 2), "consumer warpgroups issuing wgmma (one more warpgroup produces)"),
    Knob("persistent", (False, True), "at most one CTA per SM, striding over the tiles; else one per tile"),
    Knob("group_m", (1, 4, 8, 16), "tile rows per raster group (L2 reuse)"),
)


def kernel_constraints(M: int, N: int, tile_m: tuple, tile_n: tuple, target, kernel_ok, smem) -> tuple:
    """`kernel_ok(config)`: the kernel's rules (sm90_gemm.check) hold; `smem(config)`: its dynamic shared bytes."""
    return (
        Constraint("the kernel's rules (sm90_gemm.check): whole m64 slices per consumer, at most 128 fp32 "
                   "accumulators per thread, shared memory within sm_90's opt-in limit", kernel_ok),
        Constraint(f"the ring, staging and barriers must fit the target's {target.shared_limit}-byte opt-in "
                   "shared memory",
                   lambda c: not kernel_ok(c) or smem(c) <= target.shared_limit),
        Constraint("no tile larger than the smallest choice covering its dimension",
                   lambda c: c["bm"] <= covering(tile_m, M) and c["bn"] <= covering(tile_n, N)),
        Constraint("group_m > 1 only where there are several tile rows and columns",
                   lambda c: c["group_m"] == 1 or min(tiles(M, N, c)) > 1),
    )


def space(w, target) -> Space:
    if not applies(w, target):
        raise WorkloadError(f"gemm_sm90 takes float16 or bfloat16 matmul with K and N multiples of {TMA_ALIGN_ELEMS} "
                            f"on a wgmma target; got {w.key} on {target.arch}")
    return Space(
        knobs=(
            Knob("bm", TILE_CHOICES, "rows of C per CTA, split over the consumer warpgroups in m64 slices"),
            Knob("bn", TILE_CHOICES, "columns of C per CTA: the wgmma N"),
            *RING_KNOBS,
            Knob("cluster", (1, 2), "CTAs per cluster along M, sharing each B box by TMA multicast"),
        ),
        constraints=(
            *kernel_constraints(w["M"], w["N"], TILE_CHOICES, TILE_CHOICES, target, _kernel_ok, _smem),
            Constraint("cluster 2 only where M spans more than one tile (else the second CTA has no rows)",
                       lambda c: c["cluster"] == 1 or w["M"] > c["bm"]),
        ),
    )


def _smem(config: dict) -> int:
    return sm90_gemm.smem_layout(hopper_config(config), "float16").dynamic  # bfloat16's is the same


def default_config(w, target) -> dict:
    return size_rule_default(w["M"], w["N"], TILE_CHOICES, TILE_CHOICES, target, space(w, target), cluster=1)


def size_rule_default(M: int, N: int, tile_m: tuple, tile_n: tuple, target, s: Space, **fixed) -> dict:
    """LARGE where its tiles alone fill every SM at least once; else the smaller SMALL tile (more, shorter tiles keep
    the SMs busy): a rule on the problem size. Persistent, grouped raster, plus `fixed`; clipped to small shapes."""
    sms = target.sm_count or NOMINAL_SM_COUNT
    large_tiles = tiles(M, N, LARGE)
    pick = LARGE if large_tiles[0] * large_tiles[1] >= sms else SMALL
    config = dict(pick, persistent=True, group_m=8, **fixed)
    config["bm"], config["bn"] = min(config["bm"], covering(tile_m, M)), min(config["bn"], covering(tile_n, N))
    if config["bm"] < 64 * config["consumers"]:
        config["consumers"] = 1
    if not s.is_valid(config):
        config["group_m"] = 1
    return config if s.is_valid(config) else next(iter(s))


# ---- schedule ------------------------------------------------------------------------------------
def schedule(w, config, target) -> S.Module:
    cfg = hopper_config(config)
    M, N, K = w["M"], w["N"], w["K"]
    ab = w.dtype
    A = S.Buffer("in_A", ab, (M, K))
    B = S.Buffer("in_B", ab, (K, N))
    C = S.Buffer("out_C", ab, (M, N))
    m_units = -(-M // (cfg.bm * cfg.cluster))
    params = (
        TensorMapParam(A, (M, K), (cfg.bm, cfg.bk)),
        TensorMapParam(B, (K, N), (cfg.bk, sm90_gemm.B_BOX_COLS)),
        C, ScalarParam("M", M), ScalarParam("N", N), ScalarParam("K", K),
    )
    kernel = OpaqueKernel(
        name=sm90_gemm.kernel_name(cfg, ab),
        source=sm90_gemm.render_kernel(cfg, ab),
        prelude=sm90_gemm.prelude_blocks(cfg, ab),
        params=params,
        block=(cfg.threads, 1, 1),
        dynamic_shared_bytes=sm90_gemm.smem_layout(cfg, ab).dynamic,
        units=m_units * -(-N // cfg.bn),
        persistent=cfg.persistent,
        cluster=cfg.cluster,
        sm_count=target.sm_count,
        requires=("wgmma",),
        profile=profile(M, N, K, cfg),
    )
    return S.Module(w.op, (kernel,), (A, B, C), (), 2)


def profile(M: int, N: int, K: int, cfg: HopperGemmConfig) -> KernelProfile:
    """The launch's work as the kernel does it: whole tiles and whole 64-deep K steps (TMA's zero fill and the
    tensor cores work on the padding too); A boxes per CTA, B boxes once per cluster (multicast)."""
    m_tiles, n_tiles, k_steps = -(-M // (cfg.bm * cfg.cluster)) * cfg.cluster, -(-N // cfg.bn), -(-K // cfg.bk)
    cta_tiles = m_tiles * n_tiles
    k_padded = k_steps * cfg.bk
    a_bytes, b_bytes = cfg.bm * k_padded * 2, cfg.bn * k_padded * 2  # per CTA tile
    out_bytes = M * N * 2
    wgmma_per_tile = (cfg.bm // 64) * (k_padded // 16)
    return KernelProfile(
        flops=2.0 * cta_tiles * cfg.bm * cfg.bn * k_padded,
        global_load_bytes=float(cta_tiles * a_bytes + cta_tiles // cfg.cluster * b_bytes),
        global_store_bytes=float(out_bytes),
        # boxes land in shared memory; each consumer warpgroup's wgmma reads its A rows and all of B; the epilogue
        # stages C through shared memory
        shared_store_bytes=float(cta_tiles * (a_bytes + b_bytes) + out_bytes),
        shared_load_bytes=float(cta_tiles * (a_bytes + cfg.consumers * b_bytes) + out_bytes),
        mma=float(cta_tiles * wgmma_per_tile),
        global_accesses=float(cta_tiles * k_steps * (1 + cfg.bn // sm90_gemm.B_BOX_COLS / cfg.cluster)
                              + out_bytes / 16),
        barriers=float(cta_tiles * k_steps * cfg.threads),
        registers=min(255, cfg.accumulators + 2 * BASE_REGISTERS),
        tile=(cfg.bm, cfg.bn, cfg.bk),
        tiles=cta_tiles,
        k_steps=k_steps,
        stages=cfg.stages,
        raster_group=min(cfg.group_m, m_tiles // cfg.cluster),  # the kernel groups cluster rows
    )
