"""CUDA template for float16 and bfloat16 conv2d on Hopper (sm_90a): NHWC copies of X and of the filter (one
transpose launch into workspaces; a copy that would be the identity, of a 1 x 1 filter or 1 x 1 images, is left
out: conv2d.nhwc_copies), then the TMA + wgmma kernel of codegen/sm90_gemm.py in its implicit-GEMM mode
(codegen/sm90_conv.py): A is the KRSC filter through a 3-D tiled map, B the im2col of the NHWC copy through a TMA
im2col map, so every window, its padding and the tails of C, K and the pixels come from TMA's zero fill, and C goes
to Y in NCHW with runs of up to 16 bytes (element rows where an image's runs are shorter). A `pointwise` conv (1 x 1,
stride 1, no padding, H*W a multiple of 8) skips the copies: it is the batched GEMM kernel over the NCHW tensors.

Where it applies (`applies`): a wgmma target, half inputs, C a multiple of 8 (NHWC rows of 16-byte multiples: TMA's
stride rule), and a geometry TMA's im2col map can describe (corner offsets within [-128, 127], strides up to 8).
Elsewhere half conv2d stays on WMMA (conv2d.py), which is exact for any shape. The knobs are the GEMM's without
the cluster (the im2col box is not multicast): tiles over (output channels, output pixels), stages, consumer
warpgroups, persistent raster.
"""
from __future__ import annotations

from compiler_core.codegen import sm90_gemm
from compiler_core.codegen.sm90_conv import BK, ConvGeometry
from compiler_core.codegen.sm90_gemm import HopperGemmConfig
from compiler_core.errors import ConfigError, WorkloadError
from compiler_core.ir import stmt as S
from compiler_core.ir.expr import HALF_TYPES
from compiler_core.ir.opaque import ScalarParam, TensorMapParam
from compiler_core.ops.conv2d import out_size
from compiler_core.runtime.tensor_map import CORNER_RANGE, TiledMap, nhwc_im2col, row_major
from compiler_core.schedules.cuda import gemm_sm90
from compiler_core.space import Knob, Space

TILE_M = (64, 128, 256)  # output channels per CTA: whole m64 slices
TILE_N = (64, 128, 192, 256)  # output pixels per CTA: the wgmma N (im2col boxes hold up to 256 pixels)
CHANNEL_ALIGN = 8  # C * 2 bytes must be a multiple of 16 (the NHWC rows TMA steps over)
MAX_STRIDE = 8  # TMA's element strides


def applies(w, target) -> bool:
    """Whether conv2d dispatches `w` here (see the module docstring)."""
    if w.op != "conv2d" or w.dtype not in HALF_TYPES or not target.has_tensor_cores("wgmma"):
        return False
    bound = CORNER_RANGE[4]
    corners = (-w["pad"], w["pad"] - (w["R"] - 1), w["pad"] - (w["S"] - 1))
    return (w["C"] % CHANNEL_ALIGN == 0 and w["stride"] <= MAX_STRIDE
            and all(-bound <= c < bound for c in corners))


def pointwise(w) -> bool:
    """A 1 x 1 conv with stride 1 and no padding whose images' rows TMA can step over (H*W*2 bytes a multiple of
    16): per image, Y[n] (K x HW) = filter (K x C) @ X[n] (C x HW), a GEMM over the op's NCHW tensors as they are.
    It runs as the batched GEMM kernel with one A for every image (`pointwise_module`): no layout copies."""
    return (w["R"] == 1 and w["S"] == 1 and w["stride"] == 1 and w["pad"] == 0
            and (w["H"] * w["W"]) % gemm_sm90.TMA_ALIGN_ELEMS == 0)


def geometry(w) -> ConvGeometry:
    P, Q = out_size(w)
    return ConvGeometry(w["C"], w["R"], w["S"], P, Q, w["stride"], w["pad"])


def gemm_shape(w) -> tuple[int, int, int]:
    """(M, N, K) of the implicit GEMM: output channels, output pixels, taps x channel blocks x 64."""
    g = geometry(w)
    return w["K"], w["N"] * g.P * g.Q, g.k_blocks * BK


def hopper_config(config: dict) -> HopperGemmConfig:
    return HopperGemmConfig(bm=config["bm"], bn=config["bn"], stages=config["stages"], consumers=config["consumers"],
                            persistent=config["persistent"], group_m=config["group_m"], cluster=1, b_kmajor=True)


def _kernel_ok(w, config: dict) -> bool:
    try:
        sm90_gemm.check(hopper_config(config), "float16", geometry(w))
    except ConfigError:
        return False
    return True


# ---- space ---------------------------------------------------------------------------------------
def space(w, target) -> Space:
    if not applies(w, target):
        raise WorkloadError(f"conv2d_sm90 takes float16 or bfloat16 conv2d with C a multiple of {CHANNEL_ALIGN}, "
                            f"stride <= {MAX_STRIDE} and pad, R, S within TMA's im2col corners on a wgmma target; "
                            f"got {w.key} on {target.arch}")
    M, N, _ = gemm_shape(w)
    return Space(
        knobs=(
            Knob("bm", TILE_M, "output channels per CTA, split over the consumer warpgroups in m64 slices"),
            Knob("bn", TILE_N, "output pixels per CTA: the wgmma N and the im2col box's pixels"),
            *gemm_sm90.RING_KNOBS,
        ),
        constraints=gemm_sm90.kernel_constraints(M, N, TILE_M, TILE_N, target, lambda c: _kernel_ok(w, c), _smem),
    )


def _smem(config: dict) -> int:
    return sm90_gemm.smem_layout(hopper_config(config), "float16").dynamic


def default_config(w, target) -> dict:
    """gemm_sm90's rule on the implicit GEMM's size (a `pointwise` conv's: the batched GEMM's), with its round-cost
    tile choice (`fill_wave`): on an H200 that beat LARGE-or-SMALL on 10 of 11 ResNet-like layers it changed, by
    5-29 %, and tied on one (benchmarks/results/2026-12-01-sm90-wide-tiles/)."""
    M, N, batch = (w["K"], w["H"] * w["W"], w["N"]) if pointwise(w) else (*gemm_shape(w)[:2], 1)  # tiles per image
    return gemm_sm90.size_rule_default(M, N, TILE_M, TILE_N, target, space(w, target), batch=batch, fill_wave=True)


# ---- schedule ------------------------------------------------------------------------------------
def schedule(w, config, target, nhwc) -> S.Module:
    """`nhwc`: the op's buffers, the NHWC and KRSC copies and the transposes that fill them (conv2d.nhwc_copies)."""
    if pointwise(w):
        return pointwise_module(w, config, target, nhwc.X, nhwc.Wt, nhwc.Y)
    cfg, g = hopper_config(config), geometry(w)
    X, Wt, Y, Xt, Wr, prologue, workspaces = nhwc
    M, N, K = gemm_shape(w)
    esize = S.dtype_bytes(w.dtype)
    C, RS = w["C"], w["R"] * w["S"]
    filter_map = TiledMap(w.dtype, (C, RS, M), (C * esize, RS * C * esize), (BK, 1, cfg.bm))
    im2col_map = nhwc_im2col(w.dtype, (w["N"], w["H"], w["W"], C), (w["R"], w["S"]), w["stride"], w["pad"], BK,
                             cfg.bn)
    params = (TensorMapParam(Wr, spec=filter_map), TensorMapParam(Xt, spec=im2col_map), Y,
              ScalarParam("M", M), ScalarParam("N", N), ScalarParam("K", K))
    kernel = gemm_sm90.hopper_kernel(cfg, w.dtype, params, target, gemm_sm90.profile(M, N, K, cfg),
                                     units=-(-M // cfg.bm) * -(-N // cfg.bn), conv=g)
    # the prologue's layout copies write every workspace element before the kernel reads it: no memset
    return S.Module(w.op, (*prologue, kernel), (X, Wt, Y), workspaces, 2, overwrites_workspaces=True)


def pointwise_module(w, config, target, X: S.Buffer, Wt: S.Buffer, Y: S.Buffer) -> S.Module:
    """A `pointwise` conv as one launch of gemm_sm90's batched kernel: A the filter (a 2-D map every image shares),
    B image n's C x HW rows (N-major, a 3-D map over the batch), C image n's K x HW block of Y. The config's knobs
    are the conv space's; the GEMM reads B N-major where the im2col path reads it K-major (the same stage bytes).
    One image is a plain GEMM: 2-D maps, as the kernel's loads then are."""
    images, M, N, K = w["N"], w["K"], w["H"] * w["W"], w["C"]
    cfg = HopperGemmConfig(bm=config["bm"], bn=config["bn"], stages=config["stages"], consumers=config["consumers"],
                           persistent=config["persistent"], group_m=config["group_m"], batch=images,
                           a_batched=False)
    params = (TensorMapParam(Wt, (M, K), (cfg.bm, cfg.bk)),
              TensorMapParam(X, spec=row_major(w.dtype, (images, K, N)[images == 1:], cfg.bk, sm90_gemm.B_BOX_COLS)),
              Y,
              ScalarParam("M", M), ScalarParam("N", N), ScalarParam("K", K))
    kernel = gemm_sm90.hopper_kernel(cfg, w.dtype, params, target, gemm_sm90.profile(M, N, K, cfg),
                                     units=-(-M // cfg.bm) * -(-N // cfg.bn) * images)
    return S.Module(w.op, (kernel,), (X, Wt, Y), (), 2)
