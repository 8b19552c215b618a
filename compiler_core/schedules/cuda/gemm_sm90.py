"""CUDA template for float16 and bfloat16 matmul and batch_matmul on Hopper (sm_90a): the TMA + mbarrier + wgmma
kernel of codegen/sm90_gemm.py, whose knobs the farm tunes, handed to the pipeline as an OpaqueKernel (ir/opaque.py).

Where it applies (`applies`): matmul or batch_matmul, float16 or bfloat16, a target whose tensor cores include
"wgmma", and row strides TMA can map: A (M x K) and B (K x N) are row-major, so K and N must be multiples of 8
halves (16 bytes). Elsewhere half GEMMs stay on WMMA (gemm_wmma.py), which is exact for any shape. Edge tiles need
no guard here: TMA fills out-of-bounds elements with zeros and the epilogue masks its stores, so every M, N and K
(multiples of 8 for the last two) is exact. A batch goes through 3-D tensor maps and the tile scheduler (every
CTA walks (tile, batch entry) units), not through a grid dimension, so a persistent grid stays one CTA per SM.

Split-K (`split_k` > 1), for shapes whose tiles leave SMs idle: each tile's K loop is cut into split_k ranges, each
its own work unit writing a float32 partial tile into a workspace (split_k x batch x M x N, every element written
by exactly one unit: no memset), and a second kernel (gemm_split_k.split_k_sum) sums the partials into C. With
`split_cluster` the split_k K ranges of a tile run as one cluster of CTAs that sum their partials through
distributed shared memory and store C themselves: one launch, no workspace (codegen/sm90_gemm.py).

C is the op's output (the inputs' dtype) and B is taken as the op gives it (K x N, N-major): `out` and
`b_kmajor` are fixed.
"""
from __future__ import annotations

import math

from compiler_core.codegen import sm90_gemm
from compiler_core.codegen.sm90_gemm import CLUSTER_SPLITS, SPLIT_K_CHOICES, HopperGemmConfig
from compiler_core.errors import ConfigError, WorkloadError
from compiler_core.ir import stmt as S
from compiler_core.ir.expr import HALF_TYPES
from compiler_core.ir.opaque import KernelProfile, OpaqueKernel, ScalarParam, TensorMapParam
from compiler_core.passes.verify_resources import BASE_REGISTERS
from compiler_core.runtime.tensor_map import row_major
from compiler_core.schedules.cuda import gemm_sm90_stream_k
from compiler_core.schedules.cuda.gemm_split_k import split_k_sum
from compiler_core.space import Constraint, Knob, Space
from compiler_core.target import NOMINAL_SM_COUNT

TMA_ALIGN_ELEMS = 8  # 16-byte row strides of 2-byte elements
K_BLOCK = HopperGemmConfig().bk  # K per ring stage: one 128-byte swizzled row of 16-bit elements
TILE_CHOICES = (64, 128, 256)  # bm: whole m64 wgmma slices; also the sizes the oversize rule judges bm and bn by
# bn: the wgmma N, in 64-column B boxes. 192 (three boxes) came later, for shapes whose 128 x 256 tiles fill their
# rounds of SMs badly. The oversize rule stays on TILE_CHOICES, so a config stored before (bn=256 where N <= 192)
# stays valid.
BN_CHOICES = (64, 128, 192, 256)
LARGE = dict(bm=128, bn=256, stages=4, consumers=2)  # the probe's best at 4096^3 (1.01x cuBLAS on an H100)
SMALL = dict(bm=64, bn=128, stages=6, consumers=1)  # the probe's best at 1024^3, where LARGE leaves SMs idle
MIN_SPLIT_K_BLOCKS = 4  # K blocks of 64 per split at least: shorter ranges spend more on the ring's fill than on math
# A work unit's fixed time in K-block times: the ring's first fill (a TMA round trip before the first wgmma) and
# the epilogue's store of the tile, each about one to two K blocks' worth of loads.
UNIT_OVERHEAD_K_BLOCKS = 4
SPLIT_KNOB = Knob("split_k", SPLIT_K_CHOICES, "K ranges per tile, each a work unit of float32 partials: summed by a "
                                              "second kernel, or inside a cluster with split_cluster")
SPLIT_CLUSTER_KNOB = Knob("split_cluster", (False, True), "a tile's K ranges as one cluster of CTAs summing their "
                                                          "partials in distributed shared memory (one launch, no "
                                                          "workspace) instead of a second kernel")


def applies(w, target) -> bool:
    """Whether matmul / batch_matmul dispatches `w` here (see the module docstring)."""
    return (w.op in ("matmul", "batch_matmul") and w.dtype in HALF_TYPES and target.has_tensor_cores("wgmma")
            and w["K"] % TMA_ALIGN_ELEMS == 0 and w["N"] % TMA_ALIGN_ELEMS == 0)


def batch_of(w) -> int:
    """Independent GEMMs in `w`: batch_matmul's batch, 1 for matmul."""
    return w["batch"] if w.op == "batch_matmul" else 1


def hopper_config(config: dict, batch: int = 1) -> HopperGemmConfig:
    """The kernel's knobs from a config of this space (the op fixes bk, b_kmajor and the batch; split-K fixes out
    to float32 partials unless the cluster sums them). A config stored before the split_k knob runs without split-K,
    one stored before split_cluster sums its partials in a second kernel, one stored before stream_k without it."""
    split, in_cluster = config.get("split_k", 1), config.get("split_cluster", False)
    return HopperGemmConfig(bm=config["bm"], bn=config["bn"], stages=config["stages"], consumers=config["consumers"],
                            persistent=config["persistent"], group_m=config["group_m"], cluster=config["cluster"],
                            split_k=split, out="float32" if split > 1 and not in_cluster else "same", batch=batch,
                            split_cluster=in_cluster, stream_k=config.get("stream_k", False),
                            sk_split=config.get("sk_split", 0))


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


def space(w, target, split_knob: bool = True, cluster_knob: bool = True, stream_knob: bool = True) -> Space:
    """`split_knob=False`: the space before the split_k knob; `cluster_knob=False`: before split_cluster;
    `stream_knob=False`: before stream_k (config_space)."""
    if not applies(w, target):
        raise WorkloadError(f"gemm_sm90 takes float16 or bfloat16 matmul or batch_matmul with K and N multiples of "
                            f"{TMA_ALIGN_ELEMS} on a wgmma target; got {w.key} on {target.arch}")
    M, N = w["M"], w["N"]
    return Space(
        knobs=(
            Knob("bm", TILE_CHOICES, "rows of C per CTA, split over the consumer warpgroups in m64 slices"),
            Knob("bn", BN_CHOICES, "columns of C per CTA: the wgmma N"),
            *RING_KNOBS,
            Knob("cluster", (1, 2), "CTAs per cluster along M, sharing each B box by TMA multicast"),
            *((SPLIT_KNOB,) if split_knob else ()),
            *((SPLIT_CLUSTER_KNOB,) if split_knob and cluster_knob else ()),
            *(gemm_sm90_stream_k.KNOBS if stream_knob else ()),
        ),
        constraints=(
            *kernel_constraints(M, N, TILE_CHOICES, TILE_CHOICES, target, _kernel_ok, _smem),
            Constraint("cluster 2 only where M spans more than one tile (else the second CTA has no rows)",
                       lambda c: c["cluster"] == 1 or M > c["bm"]),
            *(split_constraints(w, target) if split_knob else ()),
            *(CLUSTER_SPLIT_CONSTRAINTS if split_knob and cluster_knob else ()),
            *(gemm_sm90_stream_k.constraints(batch_of(w), target.sm_count or NOMINAL_SM_COUNT,
                                             lambda c: cta_tiles(M, N, c)) if stream_knob else ()),
        ),
    )


CLUSTER_SPLIT_CONSTRAINTS = (
    Constraint(f"split_cluster only with split_k in {CLUSTER_SPLITS} (a CTA per K range, at most 8 in a portable "
               "cluster), persistent=False and cluster=1: the cluster's CTAs reduce their one tile together",
               lambda c: not c["split_cluster"] or (c["split_k"] in CLUSTER_SPLITS and not c["persistent"]
                                                    and c["cluster"] == 1)),
)


def split_constraints(w, target) -> tuple:
    """The split_k knob's rules: ranges of several K blocks, and splits only where tiles leave SMs idle."""
    k_blocks, batch, sms = -(-w["K"] // K_BLOCK), batch_of(w), target.sm_count or NOMINAL_SM_COUNT
    return (
        Constraint(f"split_k > 1 must leave every K range at least {MIN_SPLIT_K_BLOCKS} K blocks of 64",
                   lambda c: c["split_k"] == 1 or c["split_k"] * MIN_SPLIT_K_BLOCKS <= k_blocks),
        Constraint("split_k > 1 only where the tiles (of every batch entry) are fewer than the SMs: a grid that "
                   "fills them gains nothing from more, shorter units",
                   lambda c: c["split_k"] == 1 or batch * cta_tiles(w["M"], w["N"], c) < sms),
    )


def config_space(w, target, config: dict) -> Space:
    """The space `config` belongs to: one without a `split_k` key is of the family before the knob (it lowers
    without split-K, the kernel it always built), one without `split_cluster` of the family before that knob (a
    second kernel sums its splits), one without `stream_k` of the family before that, so heads stored or pinned
    before them keep building."""
    if not isinstance(config, dict):
        return space(w, target)
    return space(w, target, split_knob="split_k" in config, cluster_knob="split_cluster" in config,
                 stream_knob="stream_k" in config)


def cta_tiles(M: int, N: int, config: dict) -> int:
    """Output tiles of one GEMM as CTAs see them: cluster rows of tiles, whole."""
    cluster = config.get("cluster", 1)
    return -(-M // (config["bm"] * cluster)) * cluster * -(-N // config["bn"])


def _smem(config: dict) -> int:
    return sm90_gemm.smem_layout(hopper_config(config), "float16").dynamic  # bfloat16's is the same


def default_config(w, target) -> dict:
    return size_rule_default(w["M"], w["N"], TILE_CHOICES, TILE_CHOICES, target, space(w, target),
                             batch=batch_of(w), k_blocks=-(-w["K"] // K_BLOCK), cluster=1, fill_wave=True)


def size_rule_default(M: int, N: int, tile_m: tuple, tile_n: tuple, target, s: Space, *, batch: int = 1,
                      k_blocks: int = 0, fill_wave: bool = False, **fixed) -> dict:
    """LARGE where its tiles (of every batch entry) alone fill every SM at least once; else the smaller SMALL tile
    (more, shorter tiles keep the SMs busy): a rule on the problem size. With `fill_wave` (the GEMMs' and the
    implicit-GEMM conv's default, from two rows of LARGE tiles), the tile of LARGE, WIDE and MID whose rounds of
    tiles take least time (`wave_tile`). Persistent, grouped raster, plus `fixed`; clipped to small shapes. Where
    the space has split_k, the split split_k_rule picks for the tiles; where it has stream_k, K-major halves where
    they shorten a partly filled last round (gemm_sm90_stream_k.halves_pay)."""
    sms = target.sm_count or NOMINAL_SM_COUNT
    large_tiles = tiles(M, N, LARGE)
    pick = LARGE if batch * large_tiles[0] * large_tiles[1] >= sms else SMALL
    halves = "stream_k" in s.names and batch == 1
    wave = wave_tile(M, N, batch, sms, tile_n, k_blocks, halves) if fill_wave and M >= 2 * LARGE["bm"] else SMALL
    waved = wave is not SMALL  # at least half a wave of larger tiles: no split (more units would overflow the wave)
    if waved:
        pick = wave
    config = dict(pick, persistent=True, group_m=8, **fixed)
    config["bm"], config["bn"] = min(config["bm"], covering(tile_m, M)), min(config["bn"], covering(tile_n, N))
    if config["bm"] < 64 * config["consumers"]:
        config["consumers"] = 1
    if "split_k" in s.names:
        config["split_k"] = 1
    if "split_cluster" in s.names:
        config["split_cluster"] = False
    if "stream_k" in s.names:
        config["stream_k"], config["sk_split"] = False, 0
    if not s.is_valid(config):
        config["group_m"] = 1
    if not s.is_valid(config):
        return next(iter(s))
    if "split_k" in s.names and not waved:
        config["split_k"] = split_k_rule(batch * cta_tiles(M, N, config), k_blocks, sms,
                                         lambda k: s.is_valid(dict(config, split_k=k)))
    if "stream_k" in s.names and gemm_sm90_stream_k.halves_pay(batch * cta_tiles(M, N, config), sms, k_blocks):
        halves = dict(config, stream_k=True, sk_split=2)
        if s.is_valid(halves):
            return halves
    if "split_cluster" in s.names and config["split_k"] > 1:
        one_row = config if tiles(M, N, config)[0] == 1 else one_row_tiles(M, config, tile_m, tile_n, k_blocks)
        in_cluster = cluster_split(one_row) if one_row is not None else None
        if in_cluster is not None and s.is_valid(in_cluster):
            return in_cluster
    return config


MID = dict(bm=128, bn=128, stages=6, consumers=2)  # between LARGE and SMALL: half LARGE's columns
WIDE = dict(bm=128, bn=192, stages=5, consumers=2)  # three quarters of LARGE's columns, as many stages as fit
WAVE_FILL = 0.5  # the share of one wave of SMs a tile's count must reach for that tile to be taken over SMALL
# Work per unit of tile area and time, relative to LARGE, when every SM is busy: fitted on an H200
# (benchmarks/results/2026-12-01-sm90-wide-tiles/) from shapes where each tile fills its rounds equally well.
# Narrower tiles load more bytes per multiply-add.
TILE_THROUGHPUT = ((LARGE, 1.0), (WIDE, 0.95), (MID, 0.88))


def wave_tile(M: int, N: int, batch: int, sms: int, tile_n: tuple = TILE_CHOICES, k_blocks: int = 0,
              halves: bool = False) -> dict:
    """The tile of TILE_THROUGHPUT whose tiles (of every batch entry) take the least time on `sms` SMs, among those
    whose count fills at least WAVE_FILL of one wave; else SMALL. A persistent grid takes ceil(tiles / SMs)
    rounds, each as long as one tile's area over its throughput. So a tile count just past a wave costs a whole
    extra round: 1536^3 has 72 LARGE tiles, one round with 45 % of the SMs idle, or 96 WIDE ones, three quarters
    as long (0.72 -> 0.89 of cuBLAS on an H200). At 144 LARGE tiles, 2304 x 2048 takes two rounds either way, and
    WIDE's are shorter (0.63 -> 0.80). MID beats both where its smaller tiles fit in fewer rounds (1408^2:
    121 tiles in one round, 0.62 -> 0.94). Columns are clipped to N as the default clips them. With `halves` (a
    space with stream_k), a last round the default cuts into K-major halves of `k_blocks` costs
    gemm_sm90_stream_k.HALVES_LAST_ROUND of one (`gemm_sm90_stream_k.rounds`)."""
    def cost(tile: dict, throughput: float) -> float:
        rows, cols = tiles(M, N, tile)
        return (gemm_sm90_stream_k.rounds(batch * rows * cols, sms, k_blocks, halves) * tile["bm"]
                * min(tile["bn"], covering(tile_n, N)) / throughput)

    filling = [(cost(tile, throughput), i, tile) for i, (tile, throughput) in enumerate(TILE_THROUGHPUT)
               if batch * math.prod(tiles(M, N, tile)) >= WAVE_FILL * sms]
    return min(filling)[2] if filling else SMALL


def cluster_split(config: dict) -> dict:
    """`config`'s split summed inside a cluster: half the workspace rule's split (at least 2) over an 8-stage ring,
    one unit per CTA. The default where the tiles form one row (M within a tile: decode steps, small batches). On
    an H200 (benchmarks/results/2026-11-30-split-cluster/) it beat the workspace split on 7 of 8 such shapes
    (M = 8-64, up to 0.79 -> 0.90 of cuBLAS; M=1 lost 2 %); the cluster at the workspace rule's own split lost on
    all of them (a cluster of 4 or 8 CTAs waits for room in one GPC, and each CTA reads more peers). Over several
    tile rows it won on two shapes and lost 17 % on one (M=200, K=8192), so there the knob is the search's, except
    where two rows of 64 become one of 128 (`one_row_tiles`)."""
    return dict(config, split_cluster=True, persistent=False, stages=8, split_k=max(2, config["split_k"] // 2))


ONE_ROW = dict(bm=128, bn=64, consumers=2, group_m=1)  # tiles of M in (ONE_ROW_MIN_M, 128]: one row, as many tiles
ONE_ROW_MIN_M = 80  # at M = 65-80 the one row lost up to 8 % (or tied), from 96 on it gained 5-26 %
ONE_ROW_MAX_K_BLOCKS = 32  # K blocks per clustered CTA at most when halving the split leaves SMs idle


def one_row_tiles(M: int, config: dict, tile_m: tuple, tile_n: tuple, k_blocks: int) -> dict | None:
    """`config` (split over two rows of 64-row tiles) as one row of 128 x 64 tiles with the same split, so that
    `cluster_split` can sum it in a cluster (one launch, no workspace): where ONE_ROW_MIN_M < M <= 128. On an H200
    (benchmarks/results/2026-12-01-skinny-rows/) that won where halving the split keeps every SM busy (the
    workspace rule's split is 2: M = 96-128 at 4096^2, 0.80-0.92 -> 0.96-1.01 of cuBLAS) or leaves each clustered
    CTA at most ONE_ROW_MAX_K_BLOCKS K blocks (128 x 2048^2: 0.57 -> 0.87); with longer K ranges the half split
    lost (100 x 2048 x 8192: 0.91 -> 0.82). None where it does not apply."""
    if not (ONE_ROW_MIN_M < M <= ONE_ROW["bm"] and ONE_ROW["bm"] in tile_m and ONE_ROW["bn"] in tile_n):
        return None
    half = max(2, config["split_k"] // 2)
    if config["split_k"] != 2 and k_blocks > ONE_ROW_MAX_K_BLOCKS * half:
        return None
    return dict(config, **ONE_ROW)


def split_k_rule(units: int, k_blocks: int, sms: int, valid) -> int:
    """The split that the kernel's occupancy says is fastest for `units` tiles (of every batch entry) of k_blocks
    K blocks each: a persistent CTA holds an SM alone (__launch_bounds__(THREADS, 1) and a ring of 100+ KB of
    shared memory), so U units take ceil(U / SMs) rounds, each as long as one unit: its k_blocks / split K blocks
    plus UNIT_OVERHEAD_K_BLOCKS. Splitting pays while it fills idle SMs (16 tiles on 132 SMs: 8 splits run in one
    round, each an eighth as long) and stops paying once the units overflow a round. The partials' sum (a launch
    over split x M x N floats, small where the tiles are few) is left out: ties go to the smaller split.
    `valid(split)`: the space takes it."""
    def rounds(split: int) -> float:
        return -(-units * split // sms) * (k_blocks / split + UNIT_OVERHEAD_K_BLOCKS)

    return min((k for k in SPLIT_K_CHOICES if k == 1 or valid(k)), key=lambda k: (rounds(k), k))


# ---- schedule ------------------------------------------------------------------------------------
def schedule(w, config, target) -> S.Module:
    """The kernel over the op's buffers; with split_k > 1 it writes float32 partials into a workspace and a second
    kernel sums them into C, or with split_cluster its clusters sum them and store C."""
    batch = batch_of(w)
    cfg = hopper_config(config, batch)
    M, N, K = w["M"], w["N"], w["K"]
    ab = w.dtype
    lead = (batch,) if w.op == "batch_matmul" else ()
    A = S.Buffer("in_A", ab, (*lead, M, K))
    B = S.Buffer("in_B", ab, (*lead, K, N))
    C = S.Buffer("out_C", ab, (*lead, M, N))
    ws = (S.Buffer(f"ws_{w.op}_partials", "float32", (cfg.split_k * batch * M * N,))
          if cfg.split_k > 1 and not cfg.split_cluster else None)
    in_cluster = cfg.split_k if cfg.split_cluster else 1  # CTAs of a unit's cluster: its tile's K ranges
    params = (*_operand_maps(A, B, cfg, ab, M, N, K), C if ws is None else ws,
              ScalarParam("M", M), ScalarParam("N", N), ScalarParam("K", K))
    units = -(-M // (cfg.bm * cfg.cluster)) * -(-N // cfg.bn) * batch * cfg.split_k // in_cluster
    stream_k = (gemm_sm90_stream_k.stream_k_workspaces(w.op, cfg, target, units, -(-K // K_BLOCK)) if cfg.stream_k
                else ())
    if stream_k:
        ctas = gemm_sm90_stream_k.stream_k_ctas(target)
        params += (*stream_k, ScalarParam("sk_ctas", ctas))
        units = max(units, ctas)  # fewer tiles than SMs: every SM still takes a share of K
    kernel = hopper_kernel(cfg, ab, params, target, profile(M, N, K, cfg, target), units=units,
                           cluster=cfg.cluster * in_cluster)
    if stream_k:
        # partials are written before they are read; the flags are found zero and left zero
        return S.Module(w.op, (kernel,), (A, B, C), stream_k, 2, overwrites_workspaces=True, kept_zero=stream_k[1:])
    if ws is None:
        return S.Module(w.op, (kernel,), (A, B, C), (), 2)
    # every unit writes its whole slice of partials before the sum reads them: no memset
    return S.Module(w.op, (kernel, split_k_sum(w.op, ws, C, batch * M * N, cfg.split_k)), (A, B, C), (ws,), 2,
                    overwrites_workspaces=True)


def hopper_kernel(cfg: HopperGemmConfig, ab: str, params: tuple, target, kernel_profile: KernelProfile, *,
                  units: int, cluster: int = 1, conv=None) -> OpaqueKernel:
    """The rendered kernel of codegen/sm90_gemm.py for `cfg` as an OpaqueKernel over `params` (its tensor maps,
    output and scalars): the GEMM's, the pointwise conv's, or with `conv` (a ConvGeometry) the implicit-GEMM
    conv2d's."""
    return OpaqueKernel(
        name=sm90_gemm.kernel_name(cfg, ab, conv),
        source=sm90_gemm.render_kernel(cfg, ab, conv),
        prelude=sm90_gemm.prelude_blocks(cfg, ab, conv),
        params=params,
        block=(cfg.threads, 1, 1),
        dynamic_shared_bytes=sm90_gemm.smem_layout(cfg, ab).dynamic,
        units=units,
        persistent=cfg.persistent,
        cluster=cluster,
        sm_count=target.sm_count,
        requires=("wgmma",),
        profile=kernel_profile,
    )


def _operand_maps(A: S.Buffer, B: S.Buffer, cfg: HopperGemmConfig, ab: str, M: int, N: int, K: int) -> tuple:
    """A's and B's tensor maps: 2-D (one GEMM, or a batch of one), or 3-D with the batch outermost and a box of one
    entry (codegen/sm90_gemm_units.py)."""
    if cfg.batch == 1:
        return (TensorMapParam(A, (M, K), (cfg.bm, cfg.bk)),
                TensorMapParam(B, (K, N), (cfg.bk, sm90_gemm.B_BOX_COLS)))
    return (TensorMapParam(A, spec=row_major(ab, (cfg.batch, M, K), cfg.bm, cfg.bk)),
            TensorMapParam(B, spec=row_major(ab, (cfg.batch, K, N), cfg.bk, sm90_gemm.B_BOX_COLS)))


def profile(M: int, N: int, K: int, cfg: HopperGemmConfig, target=None) -> KernelProfile:
    """The launch's work as the kernel does it: whole tiles and whole 64-deep K steps (TMA's zero fill and the
    tensor cores work on the padding too); A boxes per CTA, B boxes once per cluster (multicast). A batch multiplies
    the tiles; split-K cuts each tile's K steps over its units and writes float32 partials, one slice per split, or
    with split_cluster keeps them in shared memory, each CTA reading a 1/split of every peer's tile. Stream-K
    balances the rounds and writes and reads its float32 partial tiles (gemm_sm90_stream_k.partial_bytes on
    `target`'s SMs) through global memory."""
    m_tiles, n_tiles, k_steps = -(-M // (cfg.bm * cfg.cluster)) * cfg.cluster, -(-N // cfg.bn), -(-K // cfg.bk)
    cta_tiles = m_tiles * n_tiles * cfg.batch
    k_padded = k_steps * cfg.bk
    a_bytes, b_bytes = cfg.bm * k_padded * 2, cfg.bn * k_padded * 2  # per CTA tile
    out_bytes = (1 if cfg.split_cluster else cfg.split_k) * cfg.batch * M * N * (4 if cfg.out == "float32" else 2)
    partials = cta_tiles * cfg.bm * cfg.bn * 4 * cfg.split_k if cfg.split_cluster else 0  # bytes, written and read
    sk_partials = gemm_sm90_stream_k.partial_bytes(cfg, cta_tiles, k_steps, target)
    wgmma_per_tile = (cfg.bm // 64) * (k_padded // 16)
    return KernelProfile(
        flops=2.0 * cta_tiles * cfg.bm * cfg.bn * k_padded,
        global_load_bytes=float(cta_tiles * a_bytes + cta_tiles // cfg.cluster * b_bytes + sk_partials),
        global_store_bytes=float(out_bytes + sk_partials),
        # boxes land in shared memory; each consumer warpgroup's wgmma reads its A rows and all of B; the epilogue
        # stages C through shared memory
        shared_store_bytes=float(cta_tiles * (a_bytes + b_bytes) + out_bytes + partials),
        shared_load_bytes=float(cta_tiles * (a_bytes + cfg.consumers * b_bytes) + out_bytes + partials),
        mma=float(cta_tiles * wgmma_per_tile),
        global_accesses=float(cta_tiles * k_steps * (1 + cfg.bn // sm90_gemm.B_BOX_COLS / cfg.cluster)
                              + out_bytes / 16),
        barriers=float(cta_tiles * (k_steps + (2 * cfg.split_k if cfg.split_cluster else 0)) * cfg.threads),
        registers=min(255, cfg.accumulators + 2 * BASE_REGISTERS),
        tile=(cfg.bm, cfg.bn, cfg.bk),
        tiles=cta_tiles * cfg.split_k,  # work units: a persistent CTA's rounds count these
        k_steps=-(-k_steps // cfg.split_k),  # per unit (the longest range)
        stages=cfg.stages,
        raster_group=min(cfg.group_m, m_tiles // cfg.cluster),  # the kernel groups cluster rows
        split_k=cfg.split_k,
        balanced_rounds=cfg.stream_k,
    )
