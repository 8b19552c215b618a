"""matmul's and batch_matmul's knobs beyond the GEMM's: `b_source`, the GEMM builder's B packed into panels or read
where it lies (`gemm.GemmOperands.b_direct`), and bfloat16's `dot` (gemm_bf16_dot). One space, default and operand
choice for both templates."""
from __future__ import annotations

from collections.abc import Callable

from compiler_core.schedules.cpu import gemm
from compiler_core.schedules.cpu import gemm_bf16_dot as bf16_dot
from compiler_core.space import Constraint, Knob, Space

# B at most this large (bytes, per problem) is read in place by default, by the vector's lanes (else 256 KiB)
IN_PLACE_B_BYTES = {16: 1 << 20}


def space(w, target, b_source_knob: bool = True, dot_knob: bool = True) -> Space:
    """The GEMM's space (with the batch split where the workload has a batch), `dot` where the operands are bfloat16
    and the target has AVX-512 BF16 (gemm_bf16_dot), and `b_source`, which reads B in place only where it is float32
    and in whole panels: an edge panel would read past B's end. Without `b_source_knob`, the space before that knob
    (B packed); without `dot_knob`, float32 FMAs."""
    base = gemm.space(target, batch=w.param_dict.get("batch"))
    dtype, N = w.dtype, w["N"]
    if dot_knob and bf16_dot.offered(dtype, target):
        base = base.with_knob(*bf16_dot.knob())
    if not b_source_knob:
        return base
    return base.with_knob(
        Knob("b_source", ("packed", "in_place"), "B packed into kc x nr panels, or read where it lies"),
        Constraint(f"b_source 'in_place' needs float32 B ({dtype} here) and N ({N}) a multiple of nr",
                   lambda c: c["b_source"] == "packed" or (dtype == "float32" and N % c["nr"] == 0)))


def config_space(w, target, config) -> Space:
    """A config without `b_source` was stored before the knob: B packed, in the space it came from; one without `dot`
    (made for a target without AVX-512 BF16, or before the knob) multiplies by float32 FMAs."""
    known = lambda name: not isinstance(config, dict) or name in config  # noqa: E731
    return space(w, target, b_source_knob=known("b_source"), dot_knob=known("dot"))


def default_config(w, target) -> dict:
    """The GEMM's default, B read in place where it may be and is small enough to stay in cache across the row
    blocks (IN_PLACE_B_BYTES): packed / in place on one host, 9 shapes per ISA
    (benchmarks/results/2026-11-30-cpu-gemm-b-in-place/): AVX-512 1.13-1.31x with B up to 1 MiB, 0.96-0.98x at
    2-4 MiB; AVX2 1.02-1.09x up to 256 KiB, 0.65-0.97x from 1 MiB; SSE 1.06-1.29x up to 256 KiB."""
    M, N, K = w["M"], w["N"], w["K"]
    config = gemm.default_config(target, M, N, batch=w.param_dict.get("batch"))
    eligible = w.dtype == "float32" and N % config["nr"] == 0
    limit = IN_PLACE_B_BYTES.get(target.vector_lanes_f32, 256 << 10)
    config = dict(config, b_source="in_place" if eligible and K * N * 4 <= limit else "packed")
    if bf16_dot.offered(w.dtype, target):
        config["dot"] = "bf16"
    return config


def b_operands(config: dict, B, element: Callable, row_start: Callable) -> dict:
    """GemmOperands' B for the config: `b` (element(bt, k, j), packed by the builder), or `b_direct` (B from
    row_start(bt, k) on, read in place)."""
    if config.get("b_source") == "in_place":
        return {"b": None, "b_direct": (B, row_start)}
    return {"b": element}
