"""A Hopper GEMM kernel rendered from knobs: C[M,N] = A[M,K] @ B[K,N], fp16 or bf16 inputs, fp32 accumulation,
C in fp16, bf16 or fp32. A probe for what TMA + mbarrier pipelines + wgmma reach before this becomes a schedule
template (benchmarks/hopper_gemm_probe.py runs it).

The kernel, one CTA of (consumers + 1) warpgroups:
- warpgroup 0 is the producer: one thread walks the CTA's tiles and their K blocks, and for each K block waits
  until ring stage s is empty, announces the stage's bytes on full[s] (arrive.expect_tx) and issues the TMA loads
  of the A box (BK x BM, 128B swizzle) and the B boxes (64 columns x BK rows each) into stage s.
- warpgroups 1..consumers each own BM/consumers rows of the tile, as m64 slices: per K block they wait on full[s],
  issue BK/16 x slices wgmma.m64nBNk16 from shared memory (descriptors), commit, wait until the previous K block's
  group has finished and then release that block's stage (one arrive per warpgroup on empty[s]).
- the ring (stage, phase) runs on across tiles, so the producer loads the next tile while the consumers store C.
- the epilogue converts the fp32 accumulators, stages each warp's 16 rows x 128 bytes through its own padded
  shared buffer and writes C with 16-byte stores (element stores at the right/bottom edge or for unaligned rows).
- persistent: gridDim.x CTAs stride over the tiles in a grouped raster (group_m tile rows walked column by
  column, for L2 reuse); non-persistent: one tile per CTA, the same code.
- cluster 2: two CTAs (__cluster_dims__) take the two BM-row halves of a 2*BM x BN tile; each loads its own A and
  every other B box, multicast into both CTAs' stage, so B crosses L2 once per pair. Each CTA's full[s] still
  expects A + all of B (the bytes that land in it, whoever issued them; a peer's bytes may land before the local
  expect_tx, which the transaction count allows), and empty[s] counts the consumer warpgroups of both CTAs: a
  stage is refilled only when every CTA it is multicast into has released it.

B is row-major (K x N, PyTorch's layout) by default and is consumed N-major (imm-trans-b = 1: the descriptor's
LBO steps between 64-column boxes); `b_kmajor` takes B as N x K row-major (B transposed, K contiguous) and
consumes it K-major like A.

`batch` > 1 runs that many GEMMs through 3-D tensor maps, and `split_k` > 1 splits each tile's K loop over that
many work units writing float32 partial tiles: the persistent loop then walks (tile, batch entry, K range) units
(codegen/sm90_gemm_units.py). With both at 1 the kernel's text is the plain GEMM's.

`split_cluster` sums the K ranges' partials inside the kernel instead: the split_k CTAs of one tile form a cluster
(__cluster_dims__(split_k)), each writes its float32 partial tile into its own shared memory (over the ring, idle
once the K loop is done), and after a cluster barrier each sums its 1/split_k of the tile's rows across the
cluster's partials through distributed shared memory and stores them into C. One launch and no float32
workspace: a skinny GEMM's split no longer writes and re-reads split_k x M x N floats through HBM, nor waits for a
second kernel.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from compiler_core.codegen import sm90_conv, sm90_gemm_units, sm90_stream_k
from compiler_core.codegen.cuda_sm90 import SWIZZLE_ATOM_BYTES, Wgmma
from compiler_core.codegen.cuda_sm90 import prelude_blocks as sm90_prelude_blocks
from compiler_core.codegen.sm90_conv import ConvGeometry
from compiler_core.codegen.sm90_gemm_text import (
    BODY,
    CONSTANTS,
    ELEMENT_WRITE_OUT,
    GEMM_LOADS,
    GEMM_STORE,
    PAIR_STORE,
    QUAD_CONVERT,
    QUAD_VECTOR,
    REDUCE_EPILOGUE,
    REDUCE_PRODUCER_SYNCS,
    SPLIT_REDUCE,
    STORE_EPILOGUE,
    VECTOR_WRITE_OUT,
)
from compiler_core.errors import ConfigError

ELEM_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4}
C_TYPES = {"float16": "__half", "bfloat16": "__nv_bfloat16", "float32": "float"}
MAX_DYNAMIC_SMEM = 232448  # 227 KiB: sm_90's opt-in limit per block
ROW_BYTES = 128  # one 128B-swizzled row: 64 16-bit elements
B_BOX_COLS = 64  # B (N-major) arrives in boxes 64 columns wide
REGS_PRODUCER, REGS_CONSUMER = 40, 232  # setmaxnreg with two consumer warpgroups: 40*128 + 232*256 <= 65536
SPLIT_K_CHOICES = (1, 2, 4, 8, 16)
CLUSTER_SPLITS = (2, 4, 8)  # split_cluster's cluster sizes: a portable cluster holds at most 8 CTAs
PART_PAD = 32  # bytes after each float32 partial row: a half-warp's float2 writes (4 rows) meet no bank conflict


@dataclass(frozen=True)
class HopperGemmConfig:
    bm: int = 128  # rows of C per CTA tile (split over the consumer warpgroups, 64 per wgmma)
    bn: int = 128  # columns of C per tile = the wgmma N
    bk: int = 64  # K per stage: 64 16-bit elements = one 128-byte swizzled row
    stages: int = 4
    consumers: int = 2  # consumer warpgroups
    persistent: bool = True
    group_m: int = 8  # raster: tile rows per group
    cluster: int = 1  # CTAs per cluster along M, sharing B boxes by TMA multicast
    out: str = "same"  # C's dtype: float16 | bfloat16 | float32 | same (as the inputs)
    b_kmajor: bool = False  # B given as N x K (K contiguous) instead of K x N
    split_k: int = 1  # K ranges per tile, each a work unit writing a float32 partial tile (out=float32)
    batch: int = 1  # GEMMs over 3-D tensor maps (batch outermost), folded into the tile scheduler
    split_cluster: bool = False  # the split_k K ranges of a tile: one cluster, partials summed in shared memory
    a_batched: bool = True  # with batch > 1, A through a 3-D map like B; False: one A (2-D map) for every entry
    stream_k: bool = False  # the partly filled rounds spread over every CTA (codegen/sm90_stream_k.py)
    sk_split: int = 0  # stream-K's form: 0, ranges over K blocks; s > 0, K-major pieces, s K ranges per tile
    sk_quanta: int = 0  # a study parameter, not a knob: ranges start at multiples of 1/sk_quanta of a tile's K

    @classmethod
    def of(cls, knobs: dict) -> HopperGemmConfig:
        unknown = set(knobs) - set(cls.__dataclass_fields__)
        if unknown:
            raise ConfigError(f"unknown knobs {sorted(unknown)}")
        return cls(**knobs)

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def threads(self) -> int:
        return 128 * (self.consumers + 1)

    @property
    def slices(self) -> int:
        """m64 wgmma slices per consumer warpgroup."""
        return self.bm // (64 * self.consumers)

    @property
    def accumulators(self) -> int:
        """fp32 accumulator registers per consumer thread."""
        return self.slices * self.bn // 2

    def out_dtype(self, ab: str) -> str:
        return ab if self.out == "same" else self.out

    def short(self) -> str:
        return (f"{self.bm}x{self.bn}x{self.bk} s{self.stages} c{self.consumers} "
                f"{'P' if self.persistent else 'NP'} g{self.group_m} out={self.out}{' Bk' if self.b_kmajor else ''}"
                f"{f' sk{self.split_k}' if self.split_k > 1 else ''}{'c' if self.split_cluster else ''}"
                f"{f' b{self.batch}' if self.batch > 1 else ''}{' SK' if self.stream_k else ''}")

    def knob_text(self) -> str:
        """The knobs as the kernel's header comment lists them (split_k, batch, split_cluster and stream_k where they
        are not 1 or off, a_batched where a batch shares one A)."""
        def shown(knob: str, value) -> bool:
            if knob == "a_batched":
                return not value and self.batch > 1
            if knob in ("stream_k", "sk_quanta", "sk_split"):
                return self.stream_k
            return knob not in ("split_k", "batch", "split_cluster") or value not in (1, False)

        knobs = {k: v for k, v in self.as_dict().items() if shown(k, v)}
        return ", ".join(f"{k}={v}" for k, v in knobs.items())


@dataclass(frozen=True)
class SmemLayout:
    a_stage: int
    b_stage: int
    epi_pitch: int  # bytes per staged output row (128 + padding against bank conflicts)
    a: int  # offsets from the 1024-aligned base
    b: int
    epi: int
    bars: int
    part: int  # split_cluster's float32 partial tile: BM rows of `part_pitch` bytes from offset 0, over the ring
    part_pitch: int
    total: int  # bytes used from the aligned base
    dynamic: int  # bytes to request: total + alignment slack


def smem_layout(cfg: HopperGemmConfig, ab: str) -> SmemLayout:
    out_bytes = ELEM_BYTES[cfg.out_dtype(ab)]
    a_stage = cfg.bm * ROW_BYTES
    b_stage = cfg.bn * ROW_BYTES if cfg.b_kmajor else (cfg.bn // B_BOX_COLS) * cfg.bk * ROW_BYTES
    # Epilogue rows: 2-byte outputs are written as 4-byte pairs, 8 rows x 4 lanes per instruction: a 16-byte pad
    # puts row r on banks 4r..4r+3. fp32 pairs are 8 bytes, served per half-warp (4 rows): a 32-byte pad puts
    # row r on banks 8r..8r+7. Reads are 16 bytes per lane, one 128-byte row per quarter-warp: conflict-free.
    epi_pitch = ROW_BYTES + (32 if out_bytes == 4 else 16)
    a, b = 0, cfg.stages * a_stage
    epi = b + cfg.stages * b_stage
    part_pitch = cfg.bn * 4 + PART_PAD
    part_bytes = cfg.bm * part_pitch if cfg.split_cluster else 0
    bars = max(epi + cfg.consumers * 4 * 16 * epi_pitch, part_bytes)
    total = bars + 2 * cfg.stages * 8
    return SmemLayout(a_stage, b_stage, epi_pitch, a, b, epi, bars, 0, part_pitch, total,
                      total + SWIZZLE_ATOM_BYTES)


def check(cfg: HopperGemmConfig, ab: str = "float16", conv: ConvGeometry | None = None) -> None:
    """Raises ConfigError naming the first rule the knobs break."""
    rules = (
        (conv is None or (cfg.b_kmajor and cfg.cluster == 1),
         "conv2d reads B (im2col rows of channels) K-major, without a cluster: b_kmajor=True, cluster=1"),
        (ab in ("float16", "bfloat16"), f"inputs must be float16 or bfloat16, got {ab!r}"),
        (cfg.out in ("same", *ELEM_BYTES), f"out must be same|float16|bfloat16|float32, got {cfg.out!r}"),
        (cfg.bk == 64, "bk must be 64: one 128-byte swizzled row of 16-bit elements per stage"),
        (cfg.consumers in (1, 2), "consumers must be 1 or 2 warpgroups"),
        (cfg.bm in (64, 128, 256) and cfg.bm % (64 * cfg.consumers) == 0,
         "bm must be 64, 128 or 256 and give each consumer warpgroup whole m64 slices"),
        (cfg.bn % B_BOX_COLS == 0 and 64 <= cfg.bn <= 256, "bn must be 64, 128, 192 or 256"),
        (2 <= cfg.stages <= 8, "stages must be 2..8"),
        (cfg.accumulators <= 128, f"{cfg.accumulators} fp32 accumulators per thread: at most 128 fit"),
        (cfg.group_m >= 1, "group_m must be >= 1"),
        (cfg.cluster in (1, 2), "cluster must be 1 or 2 CTAs"),
        (cfg.cluster == 1 or not cfg.b_kmajor, "cluster 2 multicasts N-major B boxes: use b_kmajor=False"),
        (cfg.split_k in SPLIT_K_CHOICES, f"split_k must be one of {SPLIT_K_CHOICES}"),
        (cfg.split_k == 1 or cfg.split_cluster or cfg.out == "float32",
         "split-K units write float32 partial tiles: out=float32 (or split_cluster)"),
        (not cfg.split_cluster or cfg.split_k in CLUSTER_SPLITS,
         f"split_cluster takes split_k in {CLUSTER_SPLITS}: one CTA per K range, at most 8 in a portable cluster"),
        (not cfg.split_cluster or (not cfg.persistent and cfg.cluster == 1),
         "split_cluster runs one unit per CTA (persistent=False) without the B-sharing cluster (cluster=1): the "
         "cluster's CTAs reduce their one tile together"),
        (cfg.batch >= 1, "batch must be >= 1"),
        (conv is None or (cfg.split_k == 1 and cfg.batch == 1), "conv2d takes neither split_k nor batch"),
        (not cfg.stream_k or (conv is None and cfg.persistent and cfg.cluster == 1 and cfg.split_k == 1
                              and cfg.batch == 1),
         "stream_k spreads one GEMM's tiles over a persistent grid of single CTAs: persistent=True, cluster=1, "
         "split_k=1, batch=1, no conv2d"),
    )
    for ok, message in rules:
        if not ok:
            raise ConfigError(message)
    need = smem_layout(cfg, ab).dynamic
    if need > MAX_DYNAMIC_SMEM:
        raise ConfigError(f"needs {need} bytes of shared memory, over the {MAX_DYNAMIC_SMEM}-byte limit")


def kernel_name(cfg: HopperGemmConfig, ab: str, conv: ConvGeometry | None = None) -> str:
    out = cfg.out_dtype(ab)
    short = {"float16": "f16", "bfloat16": "bf16", "float32": "f32"}
    return (f"tf_sm90_{'conv' if conv else 'gemm'}_{short[ab]}_{short[out]}_{cfg.bm}x{cfg.bn}x{cfg.bk}_s{cfg.stages}"
            f"_c{cfg.consumers}_g{cfg.group_m}{'_bk' if cfg.b_kmajor else ''}{'_cl2' if cfg.cluster == 2 else ''}"
            f"{f'_sk{cfg.split_k}' if cfg.split_k > 1 else ''}{'c' if cfg.split_cluster else ''}"
            f"{f'_b{cfg.batch}' if cfg.batch > 1 else ''}{'_a2' if cfg.batch > 1 and not cfg.a_batched else ''}"
            f"{'_sk' if cfg.stream_k else ''}")


def wgmma_variant(cfg: HopperGemmConfig, ab: str) -> Wgmma:
    return Wgmma(cfg.bn, ab, trans_a=0, trans_b=0 if cfg.b_kmajor else 1)


def b_descriptor_fields(cfg: HopperGemmConfig) -> tuple[int, int, int]:
    """(LBO, SBO, bytes per k16 step) of B's descriptor: K-major like A, or N-major across 64-column boxes."""
    if cfg.b_kmajor:
        return 16, SWIZZLE_ATOM_BYTES, 32
    return cfg.bk * ROW_BYTES, SWIZZLE_ATOM_BYTES, 16 * ROW_BYTES


def a_descriptor_fields() -> tuple[int, int, int]:
    """(LBO, SBO, bytes per k16 step) of A's descriptor: K-major, 8-row groups of 1024 bytes."""
    return 16, SWIZZLE_ATOM_BYTES, 32


def render(cfg: HopperGemmConfig, ab: str = "float16", conv: ConvGeometry | None = None) -> str:
    """The complete CUDA source of the kernel `kernel_name(cfg, ab, conv)`."""
    return _drop_blank_lines("\n".join(prelude_blocks(cfg, ab, conv)) + "\n" + render_kernel(cfg, ab, conv))


def prelude_blocks(cfg: HopperGemmConfig, ab: str = "float16", conv: ConvGeometry | None = None) -> tuple:
    """The sm90 prelude the kernel needs (cuda_sm90.prelude_blocks): what a module emits once before its kernels."""
    pieces = ["mbarrier", "tma", "wgmma_sync", "descriptor", "setmaxnreg"] + (["cluster"] if cfg.cluster > 1 else [])
    pieces += ["multicast_3d"] if cfg.cluster > 1 and cfg.batch > 1 else []
    pieces += ["dsmem"] if cfg.split_cluster else []
    return sm90_prelude_blocks(pieces + (["tma_im2col"] if conv else []), [wgmma_variant(cfg, ab)])


def _operand_slots(cfg: HopperGemmConfig, ab: str, conv: ConvGeometry | None) -> dict:
    """The text that differs between a GEMM and an implicit-GEMM conv2d (codegen/sm90_conv.py)."""
    if conv is not None:
        by_element = sm90_conv.element_write_out(conv, 16 // ELEM_BYTES[cfg.out_dtype(ab)])
        return dict(k_blocks=sm90_conv.K_BLOCKS, tile_setup=sm90_conv.TILE_SETUP, loads=sm90_conv.LOADS,
                    write_out=ELEMENT_WRITE_OUT.replace("{element}", sm90_conv.ELEMENT) if by_element
                    else VECTOR_WRITE_OUT.replace("{store}", sm90_conv.STORE),
                    helpers=sm90_conv.HELPERS, vec_ok=sm90_conv.VEC_OK)
    d, z = sm90_gemm_units.batch_coordinate(cfg.batch)
    multicast = (f"tf_tma_load_{d}d_multicast(b + j * B_BOX_BYTES, tm_b, bar, (1u << CLUSTER) - 1, t.n0 + 64 * j, "
                 f"kb * BK{z});" if cfg.cluster > 1 else "")
    da, za = (d, z) if cfg.a_batched else sm90_gemm_units.batch_coordinate(1)
    loads = (GEMM_LOADS.replace("{multicast}", multicast).replace("{da}", da).replace("{za}", za)
             .replace("{d}", d).replace("{z}", z))
    return dict(k_blocks="(K + BK - 1) / BK", tile_setup="", loads=loads,
                write_out=VECTOR_WRITE_OUT.replace("{store}", GEMM_STORE), helpers="",
                vec_ok="N % VEC == 0 && reinterpret_cast<uintptr_t>(c) % 16 == 0")


def render_kernel(cfg: HopperGemmConfig, ab: str = "float16", conv: ConvGeometry | None = None) -> str:
    """The kernel without its prelude: knob constants, device functions and the extern "C" entry."""
    check(cfg, ab, conv)
    lay = smem_layout(cfg, ab)
    w = wgmma_variant(cfg, ab)
    a_lbo, a_sbo, a_kstep = a_descriptor_fields()
    b_lbo, b_sbo, b_kstep = b_descriptor_fields(cfg)
    out = cfg.out_dtype(ab)
    consts = CONSTANTS.format(
        knobs=cfg.knob_text(), ab=ab, bm=cfg.bm, bn=cfg.bn, bk=cfg.bk, stages=cfg.stages, consumers=cfg.consumers,
        group_m=cfg.group_m, cluster=cfg.cluster, max_smem=MAX_DYNAMIC_SMEM, out_t=C_TYPES[out],
        a_stage=lay.a_stage, b_stage=lay.b_stage,
        b_box=cfg.bk * ROW_BYTES, epi_pitch=lay.epi_pitch, smem_a=lay.a, smem_b=lay.b, smem_epi=lay.epi,
        smem_bars=lay.bars, smem_total=lay.total, a_lbo=a_lbo, a_sbo=a_sbo, a_kstep=a_kstep, b_lbo=b_lbo,
        b_sbo=b_sbo, b_kstep=b_kstep, b_kmajor="true" if cfg.b_kmajor else "false")
    consts += sm90_gemm_units.constants(cfg.split_k, cfg.batch)
    if conv is not None:
        consts += sm90_conv.constants(conv, 16 // ELEM_BYTES[out])
    pair = PAIR_STORE[out]
    units = (sm90_stream_k.slots(cfg.sk_quanta, cfg.sk_split) if cfg.stream_k
             else sm90_gemm_units.slots(cfg.split_k, cfg.batch, cfg.split_cluster))
    split = cfg.split_cluster
    epilogue = sm90_stream_k.EPILOGUE if cfg.stream_k else (REDUCE_EPILOGUE if split else STORE_EPILOGUE).format(
        c_tile=units["c_tile"])
    body = BODY.format(wgmma=w.name, name=kernel_name(cfg, ab, conv), pair=pair, **_operand_slots(cfg, ab, conv),
                        **units, epilogue=epilogue,
                        split_reduce=SPLIT_REDUCE.format(smem_part=lay.part, part_pitch=lay.part_pitch,
                                                         quad_vector=QUAD_VECTOR[out], convert=QUAD_CONVERT[out])
                        if split else "",
                        producer_syncs=REDUCE_PRODUCER_SYNCS if split else "",
                        release="for (uint32_t r = 0; r < CLUSTER; ++r) tf_mbar_arrive_cluster(empty_stage, r);"
                        if cfg.cluster > 1 else "tf_mbar_arrive(empty_stage);",
                        start_sync="tf_cluster_sync();  // the peers' barriers exist before any multicast or remote "
                                   "arrive" if cfg.cluster > 1 else "__syncthreads();",
                        end_sync="tf_cluster_sync();  // no CTA leaves while a peer may still arrive on its barriers"
                                 if cfg.cluster > 1 else "",
                        rank_expr="tf_cluster_rank()" if cfg.cluster > 1 else "0",
                        dec_line=f"tf_setmaxnreg_dec<{REGS_PRODUCER}>();  // one thread issues TMA: few registers"
                        if cfg.consumers == 2 else "",
                        inc_line=f"tf_setmaxnreg_inc<{REGS_CONSUMER}>();  // room for the accumulators"
                        if cfg.consumers == 2 else "",
                        cluster_dims=f" __cluster_dims__({cfg.cluster}, 1, 1)" if cfg.cluster > 1 else
                        f" __cluster_dims__({cfg.split_k}, 1, 1)" if split else "")
    return _drop_blank_lines(f"{consts}\n{body}")


def _drop_blank_lines(text: str) -> str:
    """Lines left holding only indentation by empty knob-dependent slots go; empty lines stay."""
    return "\n".join(line for line in text.splitlines() if line.strip() or not line) + "\n"
