"""matmul's and batch_matmul's knobs beyond the GEMM's: `b_source`, the GEMM builder's B packed into panels or read
where it lies (`gemm.GemmOperands.b_direct`), and bfloat16's `dot` (gemm_bf16_dot). One space, default and operand
choice for both templates."""
from __future__ import annotations

from collections.abc import Callable

from compiler_core.schedules.cpu import gemm, gemm_blocks
from compiler_core.schedules.cpu import gemm_amx as amx
from compiler_core.schedules.cpu import gemm_bf16_dot as bf16_dot
from compiler_core.space import Constraint, Knob, Space

# A float32 B at most this large (bytes, per problem) is read in place by default, by the vector's lanes (else
# 256 KiB): packed / in place on one host, 9 shapes per ISA (benchmarks/results/2026-11-30-cpu-gemm-b-in-place/):
# AVX-512 1.13-1.31x with B up to 1 MiB, 0.96-0.98x at 2-4 MiB; AVX2 1.02-1.09x up to 256 KiB, 0.65-0.97x from 1 MiB;
# SSE 1.06-1.29x up to 256 KiB.
IN_PLACE_B_BYTES = {16: 1 << 20}
# With at most this many rows of A, B is read in place whatever its size: packing it is a pass over all of B that
# few row tiles reuse. Packed / in place, float32 (benchmarks/results/2026-11-30-cpu-gemm-few-rows/): at 1-16 rows
# 1.2-13.5x on a Zen 5 (AVX-512, AVX2 and SSE builds) and 1.9-5.6x on a Sapphire Rapids Xeon; past 16 rows the hosts
# part: the Zen 5's AVX-512 build gains up to 256 rows (1.04-1.36x there), the Xeon's loses from 64 (0.94x; 0.61x at
# 256), AVX2 loses from 64 (0.89x).
SMALL_M_ROWS = 16
# With at most this many rows of A, B is streamed row by row past C's block (gemm_streamed), `STREAMED_MR` rows of B
# and one vector of columns per step. The default panel path with B in place / streamed (M=1-8, float32 and half types;
# benchmarks/results/2026-12-01-cpu-gemm-streamed/): on a Zen 5 1.2-4.2x (AVX-512, AVX2 and SSE builds) to 8 rows;
# at 16 rows the panels win (AVX-512 0.6x, AVX2 0.9x), whose register-held accumulators each B vector then feeds 16
# times.
STREAMED_M_ROWS = 8
STREAMED_MR = 8
B_SOURCES = ("packed", "in_place", "streamed", "blocks")
BLOCKS_HALF_C_MAX_BYTES = 64 << 20
# A half C's float32 block per thread under `blocks` (`gemm_blocks.blocks_ct_bytes`, what the lowering allocates) at
# most this large by default: packed / blocks on a Zen 5 1.23-1.81x with 0.5-2 MiB blocks (float16 and bfloat16,
# AVX-512 and AVX2), 0.97x (AVX-512) and 1.11x (AVX2) with 8 MiB (two threads splitting 1024x4096^2's columns).
BLOCKS_HALF_C_DEFAULT_BYTES = 4 << 20
# AMX's tiles take `blocks` by default only over a reduction at least this long. Each kc slice of a block loads and
# stores the tiles' float32 sums once more, which a short K does not pay back. Packed / blocks on a Sapphire Rapids
# Xeon (benchmarks/results/2026-11-30-half-c-blocks/):
# - K = 4096: 1.01-1.58 on 16 cores and 1.04-1.51 on 2 (12 shapes);
# - K = 1024: 0.81-1.01 on 16 cores and 0.88-1.13 on 2;
# - 2048^3 on 16 cores: 0.92.
AMX_BLOCKS_MIN_K = 4096


def space(w, target, b_source_knob: bool = True, dot_knob: bool = True) -> Space:
    """The GEMM's space (with the batch split where the workload has a batch), `dot` where the operands are bfloat16
    and the target has AVX-512 BF16 (gemm_bf16_dot), and `b_source`, which reads B in place only in whole panels (an
    edge panel would read past B's end) and not as bfloat16 pairs. Without `b_source_knob`, the space before that knob
    (B packed); without `dot_knob`, float32 FMAs."""
    base = gemm.space(target, batch=w.param_dict.get("batch"), tiles=dot_knob and amx.offered(w.dtype, target))
    if dot_knob:
        base = bf16_dot.with_knob(base, w.dtype, target, packs="packed", tiles=("packed", "blocks"))
    if not b_source_knob:
        return base
    N = w["N"]
    return base.with_knob(
        Knob("b_source", B_SOURCES, "B packed into kc x nr panels, read where it lies by the panel microkernel, "
                                    "streamed row by row past C's block (gemm_streamed), or packed per kc x nc block "
                                    "by each thread; a half type is widened as it is loaded or packed"),
        Constraint(f"b_source 'in_place' needs N ({N}) a multiple of nr",
                   lambda c: c["b_source"] != "in_place" or N % c["nr"] == 0),
        Constraint("b_source 'streamed' reads A in place in one loop order: pack_a 0, order 'jr_ir'",
                   lambda c: c["b_source"] != "streamed" or (c["pack_a"] == 0 and c["order"] == "jr_ir")),
        Constraint(f"b_source 'blocks' with a {w.dtype} C sums a thread's rows x nc in float32: at most "
                   f"{BLOCKS_HALF_C_MAX_BYTES >> 20} MiB",
                   lambda c: c["b_source"] != "blocks" or _blocks_ct_bytes(w, target, c) <= BLOCKS_HALF_C_MAX_BYTES))


def _blocks_ct_bytes(w, target, config) -> int:
    """The float32 block of C that `blocks` holds per thread (`gemm_blocks.blocks_ct_bytes`; 0 for a float32 C, which
    sums in place)."""
    return 0 if w.dtype == "float32" else gemm_blocks.blocks_ct_bytes(w["M"], w["N"], config, target)


def config_space(w, target, config) -> Space:
    """A config without `b_source` was stored before the knob: B packed, in the space it came from; one without `dot`
    (made for a target without AVX-512 BF16, or before the knob) multiplies by float32 FMAs."""
    known = lambda name: not isinstance(config, dict) or name in config  # noqa: E731
    return space(w, target, b_source_knob=known("b_source"), dot_knob=known("dot"))


def default_config(w, target) -> dict:
    """The GEMM's default: B streamed for very few rows of A (STREAMED_M_ROWS); else read in place by the panels where
    it may be and either packing it would not pay (few rows of A: SMALL_M_ROWS) or a float32 B is small enough to
    stay in cache across the row blocks (IN_PLACE_B_BYTES); packed otherwise: per kc x nc block by each thread where
    the threads do not split rows and a half C's float32 block stays small (BLOCKS_HALF_C_DEFAULT_BYTES), else once
    per call (benchmarks/results/2026-12-01-cpu-gemm-blocks/). bfloat16 multiplies on AMX's tiles where the target
    has them, past the streamed rows (gemm_amx.DEFAULT), else by pair dot products where the target has them
    (gemm_bf16_dot.PAIRS_DEFAULT says why), and by FMAs on the streamed rows and elsewhere."""
    M, N, K = w["M"], w["N"], w["K"]
    config = gemm.default_config(target, M, N, batch=w.param_dict.get("batch"), dtype=w.dtype)
    lanes = target.vector_lanes_f32
    few_rows = M <= SMALL_M_ROWS
    small_b = w.dtype == "float32" and K * N * 4 <= IN_PLACE_B_BYTES.get(lanes, 256 << 10)
    if M <= STREAMED_M_ROWS:
        config = dict(config, b_source="streamed", mr=STREAMED_MR, nr=lanes, pack_a=0, order="jr_ir")
    elif N % config["nr"] == 0 and (few_rows or small_b):
        config = dict(config, b_source="in_place")
    else:
        config = dict(config, b_source="blocks" if _blocks_by_default(w, target, config) else "packed")
    if amx.offered(w.dtype, target) and config["b_source"] != "streamed":
        return _tiles_default(w, target, config)
    if bf16_dot.offered(w.dtype, target) and config["b_source"] != "streamed":
        return dict(config, **bf16_dot.PAIRS_DEFAULT)
    return bf16_dot.with_default(config, w.dtype, target)


def _tiles_default(w, target, config: dict) -> dict:
    """AMX's tiles (gemm_amx.DEFAULT) with the threads splitting columns (or problems), each packing its own B: per
    block where the half C's float32 block stays small, as the FMA default, and the reduction is long
    (AMX_BLOCKS_MIN_K), else once per call; one row of tiles for at most 16 rows of A (gemm_amx.ONE_TILE_ROW). Two
    cores of a Sapphire Rapids Xeon, rows-split / columns-split with B per block: 0.6-1.0x at 16-512 rows of A,
    within the noise at 1024-2048 (benchmarks/results/2026-12-01-cpu-amx/split-2cores.json)."""
    batch = w.param_dict.get("batch")
    config = dict(config, **amx.DEFAULT, parallel="batch" if batch is not None and batch >= target.cores else "n")
    if w["M"] <= amx.ONE_TILE_ROW:
        config["mr"] = amx.ONE_TILE_ROW
    blocks = _blocks_by_default(w, target, config) and w["K"] >= AMX_BLOCKS_MIN_K
    return dict(config, b_source="blocks" if blocks else "packed")


def _blocks_by_default(w, target, config: dict) -> bool:
    """Whether the default packs B per block by each thread: where the threads do not split rows (each would pack
    every block) and a half C's float32 block stays small (BLOCKS_HALF_C_DEFAULT_BYTES)."""
    return config["parallel"] != "m" and _blocks_ct_bytes(w, target, config) <= BLOCKS_HALF_C_DEFAULT_BYTES


def b_operands(config: dict, B, element: Callable, row_start: Callable) -> dict:
    """GemmOperands' B for the config: `b` (element(bt, k, j), packed by the builder), or `b_direct` (B from
    row_start(bt, k) on, read in place)."""
    if config.get("b_source") in ("in_place", "streamed"):
        return {"b": None, "b_direct": (B, row_start)}
    return {"b": element}
