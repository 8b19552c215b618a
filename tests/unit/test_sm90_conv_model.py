"""The Hopper conv2d kernel's index arithmetic, run in numpy against the convolution's definition (no GPU).

`tma_im2col` models what one TMA im2col load lands, as the PTX ISA's im2col mode and Triton's gluon tutorial on it
describe: window origins walk the bounding box [lower, dim + upper) in steps of the element strides, W first, then
H, then the image, starting at the load's coordinates; each origin shifted by the tap offsets reads its channels,
zeros outside the tensor. The test then runs the kernel's K loop in numpy with the producer's formulas (tile
origin -> window origin; K block -> tap and channel block; the filter's 3-D box) and the epilogue's NCHW offsets,
and compares with numpy's convolution, on shapes with strides, pads, uneven filters, C not a multiple of 64 and a
last tile past the last image. It checks the formulas conv2d_sm90 and sm90_conv compile in, under that model of
TMA; the GPU test (tests/gpu/test_conv_sm90_gpu.py) checks the model itself.
"""
from __future__ import annotations

import numpy as np
import pytest

import compiler_core as cc
from compiler_core.codegen.sm90_conv import BK
from compiler_core.ops.conv2d import out_size
from compiler_core.runtime.tensor_map import TensorMapError, nhwc_im2col
from compiler_core.schedules.cuda import conv2d_sm90
from tests.conv_sm90_cases import SHAPES_F

H100 = cc.cuda_target("sm_90a", sm_count=132)
SHAPES = SHAPES_F  # tests/conv_sm90_cases: the shapes the nvcc and gpu tiers run


def tma_im2col(x_nhwc, spec, coords, offsets) -> np.ndarray:
    """(pixels, channels) as the load lands them; coords = (c, w, h, n), offsets = (w, h)."""
    N, H, W, C = x_nhwc.shape
    c0, w, h, n = coords
    (lw, lh), (uw, uh), (_, sw, sh, _) = spec.lower, spec.upper, spec.element_strides
    out = np.zeros((spec.pixels, spec.channels), dtype=x_nhwc.dtype)
    for i in range(spec.pixels):
        hh, ww = h + offsets[1], w + offsets[0]
        if n < N and 0 <= hh < H and 0 <= ww < W:
            chans = x_nhwc[n, hh, ww, c0:c0 + spec.channels]
            out[i, :len(chans)] = chans
        w += sw
        if w >= W + uw:
            w, h = lw, h + sh
            if h >= H + uh:
                h, n = lh, n + 1
    return out


def kernel_model(p: dict, bm: int, bn: int) -> np.ndarray:
    """Y as the kernel computes it: tiles, K blocks and epilogue offsets as in sm90_conv's text."""
    w = cc.make_workload("conv2d", dict(p, dtype="float16"))
    rng = np.random.default_rng(1)
    X = rng.integers(-3, 4, (p["N"], p["C"], p["H"], p["W"])).astype(np.float64)
    Wt = rng.integers(-3, 4, (p["K"], p["C"], p["R"], p["S"])).astype(np.float64)
    g = conv2d_sm90.geometry(w)
    M, Ntot, _ = conv2d_sm90.gemm_shape(w)
    spec = nhwc_im2col("float16", (p["N"], p["H"], p["W"], p["C"]), (p["R"], p["S"]), p["stride"], p["pad"], BK, bn)
    x_nhwc = X.transpose(0, 2, 3, 1)
    krsc = Wt.transpose(0, 2, 3, 1).reshape(p["K"], p["R"] * p["S"], p["C"])
    Y = np.full(p["N"] * p["K"] * g.P * g.Q, np.nan)
    PQ = g.P * g.Q
    for m0 in range(0, M, bm):
        for n0 in range(0, Ntot, bn):
            img, pix = divmod(n0, PQ)
            oh, ow = divmod(pix, g.Q)
            win_h, win_w = oh * g.stride - g.pad, ow * g.stride - g.pad
            acc = np.zeros((bm, bn))
            for kb in range(g.k_blocks):
                rs, cb = divmod(kb, g.c_blocks)
                r, s = divmod(rs, g.S)
                a = np.zeros((bm, BK))  # the 3-D box (c: 64, rs: 1, k: bm), zeros outside
                part = krsc[m0:m0 + bm, rs, cb * BK:cb * BK + BK]
                a[:part.shape[0], :part.shape[1]] = part
                b = tma_im2col(x_nhwc, spec, (cb * BK, win_w, win_h, img), (s, r))
                acc += a @ b.T
            for i in range(min(bm, M - m0)):
                for j in range(n0, min(n0 + bn, Ntot)):
                    jimg = j // PQ
                    Y[jimg * M * PQ + (m0 + i) * PQ + j % PQ] = acc[i, j - n0]
    return Y.reshape(p["N"], p["K"], g.P, g.Q), X, Wt


def reference(X, Wt, p) -> np.ndarray:
    P, Q = out_size(cc.make_workload("conv2d", dict(p, dtype="float32")))
    xp = np.pad(X, ((0, 0), (0, 0), (p["pad"],) * 2, (p["pad"],) * 2))
    Y = np.zeros((p["N"], p["K"], P, Q))
    for r in range(p["R"]):
        for s in range(p["S"]):
            win = xp[:, :, r:r + P * p["stride"]:p["stride"], s:s + Q * p["stride"]:p["stride"]]
            Y += np.einsum("nchw,kc->nkhw", win, Wt[:, :, r, s])
    return Y


@pytest.mark.parametrize("p", SHAPES, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items()))
@pytest.mark.parametrize("tiles", [(64, 64), (128, 192)])
def test_the_kernels_arithmetic_is_the_convolution(p, tiles):
    Y, X, Wt = kernel_model(p, *tiles)
    np.testing.assert_array_equal(Y, reference(X, Wt, p))


def test_the_corners_walk_exactly_the_output_pixels():
    """Per spatial dim, the bounding box holds P (Q) window origins at the stride: the walk wraps at the row end."""
    for p in SHAPES:
        spec = nhwc_im2col("float16", (p["N"], p["H"], p["W"], p["C"]), (p["R"], p["S"]), p["stride"], p["pad"], 64,
                           64)
        P, Q = out_size(cc.make_workload("conv2d", dict(p, dtype="float32")))
        dims = ((p["W"], spec.lower[0], spec.upper[0], Q), (p["H"], spec.lower[1], spec.upper[1], P))
        for extent, lo, hi, out in dims:
            assert len(range(lo, extent + hi, p["stride"])) == out


def test_maps_the_driver_would_refuse_are_named():
    with pytest.raises(TensorMapError, match="multiple of 16"):
        nhwc_im2col("float16", (1, 8, 8, 12), (3, 3), 1, 1, 64, 64)  # 24-byte NHWC rows
    with pytest.raises(TensorMapError, match="corner"):
        nhwc_im2col("float16", (1, 300, 300, 16), (3, 3), 1, 200, 64, 64)
    with pytest.raises(TensorMapError, match="element strides"):
        nhwc_im2col("float16", (1, 64, 64, 16), (3, 3), 9, 1, 64, 64)


def test_dispatch_and_fallbacks():
    base = dict(N=2, C=16, H=9, W=9, K=32, R=3, S=3, stride=1, pad=1)
    for dtype in ("float16", "bfloat16"):
        w = cc.make_workload("conv2d", dict(base, dtype=dtype))
        assert "bm" in cc.default_config(w, H100)
        assert "block_m" in cc.default_config(w, cc.cuda_target("sm_80"))  # Ampere: WMMA
    odd_c = cc.make_workload("conv2d", dict(base, C=12, dtype="float16"))
    assert "block_m" in cc.default_config(odd_c, H100)  # NHWC rows of 24 bytes: WMMA
    stored = cc.default_config(cc.make_workload("conv2d", dict(base, dtype="float16")), cc.cuda_target("sm_80"))
    module = cc.lower(cc.make_workload("conv2d", dict(base, dtype="float16")), stored, H100)  # a WMMA head builds
    assert any(k.name.endswith("_wmma") for k in module.kernels)
