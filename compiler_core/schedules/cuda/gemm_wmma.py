"""CUDA template for float16 and bfloat16 matmul / batch_matmul on tensor cores: WMMA 16x16x16, float32
accumulation (bfloat16 fragments need sm_80's tensor cores: the target's "mma_bf16" family).

One block computes a block_m x block_n tile of C for one batch entry (blockIdx.z; the tiles of one
matmul run along blockIdx.x, in groups of `group_m` tile rows for L2 reuse). Its warps_m x warps_n
warps each own a (block_m/warps_m) x (block_n/warps_n) tile of 16x16 accumulator fragments.

The problem, its tiling and resource estimates are gemm_wmma_tiling's; the kernel a config builds (copies into
shared memory, the cp.async ring, the epilogue) is gemm_wmma_kernel's.
"""
from __future__ import annotations

from compiler_core.errors import WorkloadError
from compiler_core.ir import stmt as S
from compiler_core.schedules.cuda import gemm_simt_gather, gemm_wmma_kernel
from compiler_core.schedules.cuda import gemm_wmma_implicit as implicit_b
from compiler_core.schedules.cuda.gemm_wmma_tiling import (
    FRAG,
    TENSOR_CORES,
    Problem,
    Tiling,
    b_gathered,
    registers,
    shared_bytes,
)
from compiler_core.space import Constraint, Knob, Space

TILE_CHOICES = (16, 32, 64, 128, 256)
BLOCK_K_CHOICES = (16, 32, 64)


def _problem(w) -> Problem:
    if w.dtype not in TENSOR_CORES:
        raise WorkloadError(f"gemm_wmma handles {' and '.join(TENSOR_CORES)} only, got {w.key}")
    if w.op == "batch_matmul":
        return Problem(w["batch"], w["M"], w["N"], w["K"], True, w.dtype)
    if w.op == "matmul":
        return Problem(1, w["M"], w["N"], w["K"], False, w.dtype)
    raise WorkloadError(f"gemm_wmma handles matmul and batch_matmul (conv2d through its own problem), not {w.op!r}")


def _covering(choices: tuple, extent: int) -> int:
    """The smallest choice that covers `extent` in one tile (the largest choice if none does)."""
    return min((c for c in choices if c >= extent), default=max(choices))


def space(w, target) -> Space:
    return problem_space(_problem(w), target)


def problem_space(p: Problem, target) -> Space:
    family = TENSOR_CORES[p.dtype]
    if not target.has_tensor_cores(family):
        raise WorkloadError(f"gemm_wmma needs {p.dtype} WMMA tensor cores ({family}, "
                            f"{'sm_80' if p.dtype == 'bfloat16' else 'sm_70'} or newer); {target.arch} lists "
                            f"{', '.join(target.tensor_cores) or 'none'}")

    def tiles(c: dict) -> tuple:
        return -(-p.M // c["block_m"]), -(-p.N // c["block_n"])

    gathered = b_gathered(p)
    return Space(
        knobs=(
            Knob("block_m", TILE_CHOICES, "rows of C per block"),
            Knob("block_n", TILE_CHOICES, "columns of C per block"),
            Knob("block_k", BLOCK_K_CHOICES, "K step staged in shared memory per iteration"),
            Knob("warps_m", (1, 2, 4, 8), "warps along M; each owns block_m/warps_m rows"),
            Knob("warps_n", (1, 2, 4, 8), "warps along N; each owns block_n/warps_n columns"),
            Knob("pad", (0, 8), "halves added to each shared row against bank conflicts"),
            Knob("stages", (1, 2, 3, 4), "shared buffers in flight: 1 = register-staged loads, >= 2 = cp.async ring"),
            Knob("group_m", (1, 8), "tile rows per raster group (L2 reuse of B)"),
            *((gemm_simt_gather.KNOB,) if gathered else ()),
        ),
        constraints=(
            Constraint("block_m must be a multiple of 16*warps_m and block_n of 16*warps_n",
                       lambda c: c["block_m"] % (FRAG * c["warps_m"]) == 0
                       and c["block_n"] % (FRAG * c["warps_n"]) == 0),
            Constraint("32*warps_m*warps_n threads must not exceed the target's limit",
                       lambda c: Tiling.of(c).threads <= target.max_threads_per_block),
            Constraint("fragments per warp (and staged B elements) must fit the register estimate",
                       lambda c: registers(c, p) <= target.max_registers_per_thread),
            Constraint(f"registers per block (estimate x threads) must fit the {target.register_file}-register file",
                       lambda c: registers(c, p) * Tiling.of(c).threads <= target.register_file),
            Constraint("stages >= 2 (cp.async) needs sm_80 or newer",
                       lambda c: c["stages"] == 1 or target.sm >= 80),
            Constraint("static shared memory (A/B rings + staging + kk table) must fit the target's limit",
                       lambda c: shared_bytes(c, p) <= target.max_shared_bytes),
            Constraint("no tile larger than the smallest choice covering its dimension",
                       lambda c: c["block_m"] <= _covering(TILE_CHOICES, p.M)
                       and c["block_n"] <= _covering(TILE_CHOICES, p.N)
                       and c["block_k"] <= _covering(BLOCK_K_CHOICES, p.K)),
            Constraint("group_m > 1 only where there are several tile rows and columns",
                       lambda c: c["group_m"] == 1 or min(tiles(c)) > 1),
            *(implicit_b.constraints(p.implicit, lambda c: Tiling.of(c).threads) if gathered else ()),
        ),
    )


def default_config(w, target) -> dict:
    return problem_default(_problem(w), target)


def problem_default(p: Problem, target) -> dict:
    """128x128x32 tiles over 2x2 warps, padded, double-buffered (an implicit B from its kk table): clipped to small
    shapes."""
    bm, bn = min(128, _covering(TILE_CHOICES, p.M)), min(128, _covering(TILE_CHOICES, p.N))
    config = {
        "block_m": bm, "block_n": bn, "block_k": min(32, _covering(BLOCK_K_CHOICES, p.K)),
        # a gathered B stages its elements in registers: 8 warps keep fragments + staging clear of spills
        "warps_m": min(2, bm // FRAG), "warps_n": min(4 if b_gathered(p) else 2, bn // FRAG), "pad": 8,
        "stages": 2 if target.sm >= 80 else 1, "group_m": 8,
    }
    s = problem_space(p, target)
    # an implicit B reads its kk table where it fits beside the rings (else its hoisted j parts only)
    for gather, group in ((g, gm) for g in (("table", "hoist") if b_gathered(p) else (None,)) for gm in (8, 1)):
        candidate = dict(config, group_m=group, **({"gather": gather} if gather else {}))
        if s.is_valid(candidate):
            return candidate
    return next(iter(s))


def schedule(w, config, target) -> S.Module:
    return gemm_wmma_kernel.problem_schedule(w.op, _problem(w), config)
