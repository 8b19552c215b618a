"""conv2d's folded batch (b_source 'folded', schedules/cpu/conv2d_folded.py) without a compiler: its geometry replayed
in numpy against a direct convolution, the images' shared borders, the default's rule, the space's constraints, and
the stored configs before the knob value."""
from __future__ import annotations

import random

import numpy as np
import pytest

import compiler_core as cc
from compiler_core.ops.conv2d import out_size
from compiler_core.schedules.cpu import conv2d, conv2d_folded, gemm
from compiler_core.schedules.cpu.conv2d_folded import Fold

TARGET = cc.cpu_target(isa="avx512", cores=2)


def _conv(**params):
    return cc.make_workload("conv2d", params)


def _direct(w, x: np.ndarray, wt: np.ndarray) -> np.ndarray:
    pad, st, (P, Q) = w["pad"], w["stride"], out_size(w)
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    y = np.zeros((w["N"], w["K"], P, Q))
    for r in range(w["R"]):
        for s in range(w["S"]):
            win = xp[:, :, r:r + (P - 1) * st + 1:st, s:s + (Q - 1) * st + 1:st]
            y += np.einsum("nchw,kc->nkhw", win, wt[:, :, r, s])
    return y


def _folded_conv(w, x: np.ndarray, wt: np.ndarray) -> np.ndarray:
    """The kernel's arithmetic on its layout: the copy as `_folded_copy` writes it (image n its phase columns
    [0, pitch), the last one all `width`), B's rows at the taps' offsets, the result read back per image."""
    N, C, K, R, Sw, pad = (w[k] for k in ("N", "C", "K", "R", "S", "pad"))
    fold, (P, Q), st = Fold.of(w), out_size(w), w["stride"]
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad + st), (pad, pad + st)))  # + st: a phase's last pixel may lie past
    xf = np.full(fold.elements(C) + 64, np.nan)  # NaN: a column read but never written poisons the result
    for c in range(C):
        for a in range(st):
            for b in range(st):
                for i in range(fold.height):
                    for n in range(N):
                        extent = fold.width if n == N - 1 else fold.pitch
                        start = ((c * st + a) * st + b) * fold.plane + i * fold.row + n * fold.pitch
                        xf[start:start + extent] = xp[n, c, i * st + a, b:b + extent * st:st]
    cols = fold.columns(P)
    a_mat = wt.reshape(K, C * R * Sw)
    b_mat = np.stack([xf[fold.tap_offset(k, R, Sw):][:cols] for k in range(C * R * Sw)])
    yw = a_mat @ b_mat
    return np.stack([[[yw[k, p * fold.row + n * fold.pitch:][:Q] for p in range(P)] for k in range(K)]
                     for n in range(N)])


SHAPES = [
    dict(N=3, C=2, H=7, W=7, K=3, R=3, S=3, pad=1),  # shared borders: pitch W + 1
    dict(N=2, C=3, H=5, W=6, K=4, R=3, S=2, pad=1),  # an even window
    dict(N=4, C=2, H=5, W=5, K=3, R=5, S=5, pad=2),
    dict(N=2, C=3, H=9, W=11, K=5, R=3, S=3, stride=2, pad=1),  # phase planes
    dict(N=3, C=2, H=7, W=9, K=3, R=3, S=3, stride=2, pad=2),
    dict(N=2, C=2, H=6, W=9, K=3, R=2, S=4),  # no padding: nothing shared
    dict(N=2, C=4, H=5, W=7, K=3, R=1, S=1),
    dict(N=3, C=2, H=6, W=5, K=2, R=5, S=3, stride=3, pad=4),  # padding wider than the window, stride 3
]


@pytest.mark.parametrize("params", SHAPES, ids=str)
def test_the_folded_layout_computes_the_convolution(params):
    w = _conv(**params)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((w["N"], w["C"], w["H"], w["W"]))
    wt = rng.standard_normal((w["K"], w["C"], w["R"], w["S"]))
    np.testing.assert_allclose(_folded_conv(w, x, wt), _direct(w, x, wt), rtol=1e-9, atol=1e-9)


def test_random_shapes_fold_correctly():
    rng, pick = np.random.default_rng(1), random.Random(1)
    for _ in range(40):
        R, S = pick.randint(1, 5), pick.randint(1, 5)
        params = dict(N=pick.randint(2, 4), C=pick.randint(1, 3), K=2, R=R, S=S, stride=pick.randint(1, 3),
                      pad=pick.randint(0, max(R, S) - 1), H=pick.randint(R, 9), W=pick.randint(S, 9))
        w = _conv(**params)
        x = rng.standard_normal((w["N"], w["C"], w["H"], w["W"]))
        wt = rng.standard_normal((w["K"], w["C"], w["R"], w["S"]))
        np.testing.assert_allclose(_folded_conv(w, x, wt), _direct(w, x, wt), rtol=1e-9, atol=1e-9, err_msg=str(params))


def test_neighbouring_images_share_their_zero_border():
    assert Fold.of(_conv(N=8, C=1, H=7, W=7, K=1, R=3, S=3, pad=1)).pitch == 8  # W + 1, not W + 2
    assert Fold.of(_conv(N=8, C=1, H=14, W=14, K=1, R=5, S=5, pad=2)).pitch == 16
    assert Fold.of(_conv(N=8, C=1, H=7, W=7, K=1, R=3, S=3, pad=0)).pitch == 7  # nothing to share
    assert Fold.of(_conv(N=8, C=1, H=14, W=14, K=1, R=1, S=1, pad=0)).pitch == 14
    wide = Fold.of(_conv(N=8, C=1, H=7, W=7, K=1, R=3, S=3, pad=1))
    assert wide.row == 7 * 8 + 9 and wide.columns(7) == 6 * wide.row + 7 * 8 + 7


# ---- the default and the space -----------------------------------------------------------------------------------

def test_the_default_folds_several_small_images():
    for params in (dict(N=8, C=512, H=7, W=7, K=512), dict(N=8, C=256, H=14, W=14, K=256),
                   dict(N=3, C=128, H=28, W=28, K=128), dict(N=8, C=128, H=28, W=28, K=128)):
        for dtype in ("float32", "float16", "bfloat16"):
            w = _conv(**params, R=3, S=3, pad=1, dtype=dtype)
            config = cc.default_config(w, TARGET)
            assert config["b_source"] == "folded" and cc.get_space(w, TARGET).is_valid(config), (params, dtype)


def test_the_default_keeps_one_image_and_wide_images_per_image():
    assert cc.default_config(_conv(N=1, C=512, H=7, W=7, K=512, R=3, S=3, pad=1), TARGET)["b_source"] == "padded"
    wide = _conv(N=2, C=64, H=112, W=112, K=64, R=3, S=3, pad=1)  # 12,652 columns an image
    assert cc.default_config(wide, TARGET)["b_source"] == "padded"
    stem = _conv(N=4, C=3, H=224, W=224, K=64, R=7, S=7, stride=2, pad=3)
    assert cc.default_config(stem, TARGET)["b_source"] == "padded"
    big = _conv(N=8, C=128, H=56, W=56, K=128, R=3, S=3, stride=2, pad=1)  # 811 columns an image, but 17 MiB
    assert conv2d_folded.bytes_held(big) > conv2d_folded.FOLD_MAX_BYTES
    assert cc.default_config(big, TARGET)["b_source"] == "padded"
    # a 1x1 stride-2 conv keeps the im2col panels, folded or not
    assert cc.default_config(_conv(N=8, C=64, H=14, W=14, K=64, R=1, S=1, stride=2), TARGET)["b_source"] == "im2col"


def test_the_default_splits_rows_where_each_thread_gets_enough():
    def split(K: int, cores: int = 2) -> str:
        w = _conv(N=8, C=64, H=14, W=14, K=K, R=3, S=3, pad=1)
        return cc.default_config(w, cc.cpu_target(isa="avx512", cores=cores))["parallel"]

    rows = conv2d_folded.ROW_SPLIT_MIN_ROWS
    assert split(2 * rows) == "m" and split(2 * rows - 2) == "n" and split(8 * rows, cores=16) == "n"


def test_the_default_keeps_amx_tiles_on_the_padded_copy():
    amx = cc.cpu_target(isa="amx", cores=2)
    w = _conv(N=8, C=256, H=14, W=14, K=256, R=3, S=3, pad=1, dtype="bfloat16")
    assert cc.default_config(w, amx)["dot"] == "amx" and cc.default_config(w, amx)["b_source"] == "padded"


def test_the_folded_copy_is_bounded_in_the_default(monkeypatch):
    w = _conv(N=8, C=256, H=14, W=14, K=256, R=3, S=3, pad=1)
    monkeypatch.setattr(conv2d, "PADDED_DEFAULT_MAX_BYTES", conv2d_folded.bytes_held(w) - 1)
    assert cc.default_config(w, TARGET)["b_source"] != "folded"


def test_the_space_names_what_folding_allows(monkeypatch):
    w = _conv(N=8, C=64, H=14, W=14, K=64, R=3, S=3, pad=1, dtype="bfloat16")
    bf16 = cc.cpu_target(isa="avx512bf16", cores=2)
    space = cc.get_space(w, bf16)
    start = dict(gemm.default_config(bf16, 64, 14 * 14, batch=8, dtype="bfloat16"), b_source="padded")
    folded = conv2d.fma_default(w, bf16, start)  # the default multiplies by pairs here; by FMAs it folds
    assert folded["b_source"] == "folded" and space.is_valid(folded)
    assert any("parallel must be 'm' or 'n'" in v for v in space.violations(dict(folded, parallel="batch")))
    assert any("dot must be 'fma'" in v for v in space.violations(dict(folded, dot="bf16")))
    monkeypatch.setattr(conv2d, "PADDED_MAX_BYTES", conv2d_folded.bytes_held(w) - 1)
    assert any("holds the folded batch" in v for v in cc.get_space(w, bf16).violations(folded))


def test_stored_padded_configs_keep_their_per_image_kernel():
    """'padded' means what it meant: one GEMM per image (the golden conv2d_padded.c pins its source)."""
    w = _conv(N=2, C=3, H=9, W=11, K=5, R=3, S=3, pad=1)
    padded = dict(cc.default_config(w, TARGET), b_source="padded", parallel="batch")
    assert cc.get_space(w, TARGET).is_valid(padded)
    source = cc.generate(w, padded, TARGET)
    assert "Xp" in source and "Xf" not in source
    assert "Xf" in cc.generate(w, dict(padded, b_source="folded", parallel="m"), TARGET)
