"""CUDA template for conv2d (NCHW, KCRS) as an implicit GEMM: float32 on the SIMT GEMM template; float16 and
bfloat16 on Hopper's TMA im2col + wgmma kernel where it applies (conv2d_sm90.applies), else on tensor cores through
the WMMA template (NHWC copies or a gathered B, gemm_wmma_implicit) where the target has them for the dtype, else
on the SIMT template with float32 math (half inputs widened as they are loaded, the output narrowed as stored).

Y[n, k, p, q] = sum_{c,r,s} Wt[k, c, r, s] * X[n, c, p*stride + r - pad, q*stride + s - pad], i.e.
C[m, j] = A[m, kk] @ B[kk, j] with m = k (output channel), kk = (c, r, s), j = (n, p, q):
A is the filter viewed as a row-major [K, C*R*S] matrix (128-bit loads when C*R*S % 4 == 0), B the
im2col of X, gathered on the fly with zero padding, and C scatters to NCHW, contiguous along j within
an image (128-bit stores when P*Q % 4 == 0).
"""
from __future__ import annotations

from typing import NamedTuple

from compiler_core.ir import stmt as S
from compiler_core.ir.expr import HALF_TYPES
from compiler_core.ops.conv2d import out_size
from compiler_core.schedules.cuda import (
    conv2d_im2col,
    conv2d_sm90,
    gemm_simt,
    gemm_simt_default,
    gemm_simt_gather,
    gemm_simt_kernel,
    gemm_wmma,
    gemm_wmma_kernel,
    gemm_wmma_tiling,
    transpose,
)
from compiler_core.schedules.cuda.gemm_wmma_implicit import Implicit, KMajorB
from compiler_core.space import Constraint, Space

LANES = gemm_simt.LANES
CHUNK = 8  # halves per 16-byte copy: C a multiple of it takes the NHWC path on tensor cores
LAYOUT_TRANSPOSE = {"tile": 32, "block_rows": 8, "pad": 1}  # the transpose template's default


def problem(w) -> gemm_simt.Gemm:
    N, C, H, W, K, R, S_ = (w[x] for x in "NCHWKRS")
    stride, pad = w["stride"], w["pad"]
    P, Q = out_size(w)
    PQ, RS, CRS = P * Q, R * S_, C * R * S_
    X = S.Buffer("in_X", w.dtype, (N, C, H, W))
    Wt = S.Buffer("in_Wt", w.dtype, (K, C, R, S_))
    Y = S.Buffer("out_Y", w.dtype, (N, K, P, Q))

    def window(kk, j):
        """(image, channel, input row, input column) that im2col element (kk, j) reads."""
        c, r, s = kk // RS, kk // S_ % R, kk % S_
        img, p, q = j // PQ, j // Q % P, j % Q
        return img, c, p * stride + r - pad, q * stride + s - pad

    def x_index(b, kk, j):
        img, c, h, x = window(kk, j)
        return ((img * C + c) * H + h) * W + x

    def x_inside(b, kk, j):
        _, _, h, x = window(kk, j)
        return (0 <= h) & (h < H) & (0 <= x) & (x < W)

    def k_parts(kk):
        """X offset of (c, r, s) from the window's top-left corner, and (r, s) for the padding test."""
        c, r, s = kk // RS, kk // S_ % R, kk % S_
        return (c * H + r) * W + s, (r, s)

    def j_parts(b, j):
        """X offset of the window's top-left corner (may lie in the padding), and that corner's (row, column)."""
        img, p, q = j // PQ, j // Q % P, j % Q
        h0, x0 = p * stride - pad, q * stride - pad
        return (img * (C * H) + h0) * W + x0, (h0, x0)

    padded = (H, W) if pad else ()
    gather = gemm_simt_gather.Gather(k_parts, j_parts, padded, (R, S_) if pad else (), C * H * W)
    pointwise = R == 1 and S_ == 1 and stride == 1 and pad == 0  # im2col is X itself, contiguous along j
    a = gemm_simt.Operand(Wt, lambda b, m, kk: m * CRS + kk, "k", CRS % LANES == 0)
    bop = gemm_simt.Operand(X, x_index, "mn", pointwise and PQ % LANES == 0, x_inside if pad else None, gather)
    out = gemm_simt.Output(Y, lambda b, m, j: (j // PQ * K + m) * PQ + j % PQ, N * K * PQ, PQ % LANES == 0)
    return gemm_simt.Gemm("conv2d", 1, K, N * PQ, CRS, a, bop, out, (X, Wt))


def tensor_core_problem(w) -> gemm_wmma_tiling.Problem:
    """The implicit GEMM for the WMMA template: on NHWC copies where 16-byte chunks of C exist, else gathered."""
    return _nhwc_problem(w) if w["C"] % CHUNK == 0 else _gathered_problem(w)


def _gathered_problem(w) -> gemm_wmma_tiling.Problem:
    """A the filter, B the im2col of X gathered element by element through the SIMT template's split."""
    g = problem(w)
    imp = Implicit(g.a.buffer, g.b.buffer, g.b.gather, g.out.buffer, lambda m, j: g.out.index(0, m, j), g.inputs)
    return gemm_wmma_tiling.Problem(1, g.M, g.N, g.K, False, w.dtype, imp)


class NhwcCopies(NamedTuple):
    """The op's buffers, the NHWC input and KRSC filter the tensor-core paths read contiguous runs of C from, the
    transposes that fill them and the workspaces among them."""
    X: S.Buffer
    Wt: S.Buffer
    Y: S.Buffer
    Xt: S.Buffer  # X as NHWC: a workspace, or X itself where H = W = 1
    Wr: S.Buffer  # the filter as KRSC: a workspace, or Wt itself where R = S = 1
    prologue: tuple  # the transposes that fill the workspaces, run before the main kernel
    workspaces: tuple


def nhwc_copies(w) -> NhwcCopies:
    """X to NHWC and the filter to KRSC, both in one launch. A transpose whose inner extent is 1 (1 x 1 filters:
    KCRS is KRSC; 1 x 1 images: NCHW is NHWC) is left out and its copy is the op's buffer itself: on an H200 the
    filter's transpose of a 2048 x 512 1 x 1 conv took 29 us, one active lane of 32, more than the convolution
    (benchmarks/results/2026-12-01-sm90-conv-parts/)."""
    N, C, H, W, K, R, S_ = (w[x] for x in "NCHWKRS")
    P, Q = out_size(w)
    X = S.Buffer("in_X", w.dtype, (N, C, H, W))
    Wt = S.Buffer("in_Wt", w.dtype, (K, C, R, S_))
    Y = S.Buffer("out_Y", w.dtype, (N, K, P, Q))
    Xt = S.Buffer("ws_X_nhwc", w.dtype, (N * H * W * C,)) if H * W > 1 else X
    Wr = S.Buffer("ws_Wt_krsc", w.dtype, (K * R * S_ * C,)) if R * S_ > 1 else Wt
    moves = (((X, Xt, (N, C, H * W)),) if Xt is not X else ()) + (((Wt, Wr, (K, C, R * S_)),) if Wr is not Wt else ())
    if len(moves) == 2:  # one launch: at these sizes a launch costs about as much as a copy
        prologue = (transpose.layout_transposes("conv2d_nhwc_krsc", moves, LAYOUT_TRANSPOSE),)
    else:
        prologue = tuple(transpose.layout_transpose(f"conv2d_{'x_nhwc' if src is X else 'w_krsc'}", src, dst, shape,
                                                    LAYOUT_TRANSPOSE) for src, dst, shape in moves)
    return NhwcCopies(X, Wt, Y, Xt, Wr, prologue, tuple(b for b in (Xt, Wr) if b is not X and b is not Wt))


def _nhwc_problem(w) -> gemm_wmma_tiling.Problem:
    """The NHWC copies first (nhwc_copies), then kk = (r, s, c): A's rows and the im2col's columns are contiguous
    runs of C, copied in 16-byte chunks (zeros in the padding)."""
    N, C, H, W, K, R, S_ = (w[x] for x in "NCHWKRS")
    stride, pad = w["stride"], w["pad"]
    P, Q = out_size(w)
    PQ = P * Q
    X, Wt, Y, Xt, Wr, prologue, workspaces = nhwc_copies(w)

    def window(j, kk):
        """(image, input row, input column, channel) that im2col element (kk, j) reads."""
        rs, c = kk // C, kk % C
        img, p, q = j // PQ, j // Q % P, j % Q
        return img, p * stride - pad + rs // S_, q * stride - pad + rs % S_, c

    def index(j, kk):
        img, h, x, c = window(j, kk)
        return ((img * H + h) * W + x) * C + c

    def inside(j, kk):
        _, h, x, _ = window(j, kk)
        return (0 <= h) & (h < H) & (0 <= x) & (x < W)

    kmajor = KMajorB(index, inside if pad else None, gemm_wmma_tiling.vector_width(C))
    imp = Implicit(Wr, Xt, None, Y, lambda m, j: (j // PQ * K + m) * PQ + j % PQ, (X, Wt), kmajor, prologue,
                   workspaces)
    return gemm_wmma_tiling.Problem(1, K, N * PQ, R * S_ * C, False, w.dtype, imp)


def _path(w, target, config=None) -> str:
    """Which template builds `w`: "sm90" (Hopper TMA im2col + wgmma, conv2d_sm90.applies), "wmma" (half types where
    the target has tensor cores for them) or "simt". A config keeps the template whose knobs it has, so heads stored
    before a newer path took over their device keep building."""
    if isinstance(config, dict) and "BM" in config:
        return "simt"
    if w.dtype not in HALF_TYPES or not target.has_tensor_cores(gemm_wmma_tiling.TENSOR_CORES[w.dtype]):
        return "simt"
    if conv2d_sm90.applies(w, target) and not (isinstance(config, dict) and "block_m" in config):
        return "sm90"
    return "wmma"


def space(w, target):
    path = _path(w, target)
    if path == "sm90":
        return conv2d_sm90.space(w, target)
    if path == "wmma":
        return gemm_wmma.problem_space(tensor_core_problem(w), target)
    return _simt_space(w, target)


def config_space(w, target, config):
    """The space `config` belongs to (see _path). SIMT configs without the im2col knob are of the implicit family
    before it, and those without the gather knob lower as gather = "div" (gemm_simt.config_space)."""
    path = _path(w, target, config)
    if path == "sm90":
        return conv2d_sm90.space(w, target)
    if path == "wmma":
        return gemm_wmma.problem_space(tensor_core_problem(w), target)
    if isinstance(config, dict) and "im2col" not in config:
        return gemm_simt.config_space(problem(w), target, config)
    return _simt_space(w, target)


def _simt_space(w, target) -> Space:
    """The SIMT GEMM's space over the implicit B, plus the im2col knob where the explicit form's workspace fits
    (conv2d_im2col): a config is checked against the GEMM problem its im2col value names."""
    implicit = gemm_simt.space(problem(w), target)
    if not conv2d_im2col.fits(w):
        return implicit
    explicit = gemm_simt.space(conv2d_im2col.problem(w, problem(w))[0], target)

    def valid(c: dict) -> bool:
        rest = {k: v for k, v in c.items() if k != "im2col"}
        if c["im2col"] == "implicit":
            return implicit.is_valid(rest)
        return explicit.is_valid({k: v for k, v in rest.items() if k != "gather"})

    return Space(knobs=(*implicit.knobs, conv2d_im2col.KNOB), constraints=(
        Constraint("explicit im2col gathers nothing: gather = div",
                   lambda c: c["im2col"] == "implicit" or c.get("gather", "div") == "div"),
        Constraint("the SIMT GEMM's rules (gemm_simt.space) for the form of B that im2col names", valid),
    ))


def schedule(w, config, target) -> S.Module:
    path = _path(w, target, config)
    if path == "sm90":
        return conv2d_sm90.schedule(w, config, target, nhwc_copies(w))
    if path == "wmma":
        return gemm_wmma_kernel.problem_schedule(w.op, tensor_core_problem(w), config)
    gemm_config = {k: v for k, v in config.items() if k != "im2col"}
    if config.get("im2col") == "explicit":
        return conv2d_im2col.schedule(w, problem(w), {k: v for k, v in gemm_config.items() if k != "gather"}, target)
    return gemm_simt_kernel.schedule(problem(w), gemm_config, target)


def default_config(w, target) -> dict:
    path = _path(w, target)
    if path == "sm90":
        return conv2d_sm90.default_config(w, target)
    if path == "wmma":
        return gemm_wmma.problem_default(tensor_core_problem(w), target)
    implicit = gemm_simt_default.default_config(problem(w), target)
    if not conv2d_im2col.fits(w):
        return implicit
    return _simt_default(w, target, implicit)


def _simt_default(w, target, implicit: dict) -> dict:
    """The form the time model ranks faster (gemm_simt_default): the implicit GEMM with its gathered B, or the
    explicit copy (a write and a read of the workspace at DRAM speed) plus a plain GEMM. A pointwise layer's B is
    X itself, contiguous: it stays implicit."""
    pointwise = w["R"] == 1 and w["S"] == 1 and w["stride"] == 1 and w["pad"] == 0
    choice = dict(implicit, im2col="implicit")
    if pointwise:
        return choice
    g, cols = conv2d_im2col.problem(w, problem(w))
    gemm = gemm_simt_default.default_config(g, target)
    explicit_s = 2 * cols.nbytes / gemm_simt_default.DRAM_BYTES_S + gemm_simt_default.estimate(g, gemm)
    if explicit_s >= gemm_simt_default.estimate(problem(w), implicit):
        return choice
    explicit = dict(gemm, gather="div", im2col="explicit")
    return explicit if _simt_space(w, target).is_valid(explicit) else choice
