"""CUDA template for matmul (and batch_matmul): float32 on the SIMT GEMM, the half types (float16, bfloat16) on
tensor cores: the Hopper TMA + wgmma kernel where it applies (gemm_sm90.applies: sm_90a with K, N multiples of 8),
else WMMA (sm_80's path too). A stored config stays on the template whose knobs it has."""
from __future__ import annotations

from compiler_core.ir import stmt as S
from compiler_core.ir.expr import HALF_TYPES
from compiler_core.schedules.cuda import gemm_simt, gemm_simt_default


def _tensor_core_template(w, target, config: dict | None = None):
    """The half-type template of `w` on `target` (imported when used: each tensor-core path is its own module). A config
    with exactly WMMA's knobs stays on WMMA where the Hopper template is offered: heads tuned, stored and pinned
    before the Hopper template existed keep building."""
    from compiler_core.schedules.cuda import gemm_sm90, gemm_wmma

    if gemm_sm90.applies(w, target) and not (config is not None and _is_wmma_config(w, target, config)):
        return gemm_sm90
    return gemm_wmma


def _is_wmma_config(w, target, config: dict) -> bool:
    from compiler_core.schedules.cuda import gemm_wmma

    return isinstance(config, dict) and set(config) == {k.name for k in gemm_wmma.space(w, target).knobs}


def problem(w) -> gemm_simt.Gemm:
    """C[b] = A[b] @ B[b], all row-major: A is contiguous along k, B and C along n."""
    batch = w["batch"] if w.op == "batch_matmul" else 1
    M, N, K = w["M"], w["N"], w["K"]
    lead = (batch,) if w.op == "batch_matmul" else ()
    A = S.Buffer("in_A", "float32", (*lead, M, K))
    B = S.Buffer("in_B", "float32", (*lead, K, N))
    C = S.Buffer("out_C", "float32", (*lead, M, N))
    a = gemm_simt.Operand(A, lambda b, m, k: (b * M + m) * K + k, "k", K % gemm_simt.LANES == 0)
    bop = gemm_simt.Operand(B, lambda b, k, n: (b * K + k) * N + n, "mn", N % gemm_simt.LANES == 0)
    out = gemm_simt.Output(C, lambda b, m, n: (b * M + m) * N + n, batch * M * N, N % gemm_simt.LANES == 0)
    return gemm_simt.Gemm(w.op, batch, M, N, K, a, bop, out, (A, B))


def space(w, target):
    if w.dtype in HALF_TYPES:
        return _tensor_core_template(w, target).space(w, target)
    return gemm_simt.space(problem(w), target)


def config_space(w, target, config: dict):
    """The space `config` belongs to (what lower() validates it against): the searched one, WMMA's for a
    half-type config stored before the Hopper template took over its device, or the Hopper space before split_k
    for a config stored without it (gemm_sm90.config_space)."""
    if w.dtype in HALF_TYPES:
        template = _tensor_core_template(w, target, config)
        return template.config_space(w, target, config) if hasattr(template, "config_space") else \
            template.space(w, target)
    return space(w, target)


def schedule(w, config, target) -> S.Module:
    if w.dtype in HALF_TYPES:
        return _tensor_core_template(w, target, config).schedule(w, config, target)
    return gemm_simt.schedule(problem(w), config, target)


def default_config(w, target) -> dict:
    if w.dtype in HALF_TYPES:
        return _tensor_core_template(w, target).default_config(w, target)
    return gemm_simt_default.default_config(problem(w), target)
