"""Half-precision conv2d shapes and Hopper (TMA im2col + wgmma) configs shared by the nvcc and gpu tiers.

The shapes are those of tests/unit/test_sm90_conv_model.py (strides 1-3, pads 0-3, 7x7, 5x3 and 3x1 filters, a
pointwise layer, C from 8 to 128 so most are not a multiple of 64, P*Q odd or not divisible by 8, the last tile
past the last image), plus the 14x14x256 3x3 layer, in float16 and bfloat16. The configs walk each knob: both
consumer counts, every N tile, 2 to 8 stages, persistent or not, the raster groups.
"""
from __future__ import annotations

import compiler_core as cc

HALF_TYPES = ("float16", "bfloat16")
LAYER = dict(N=32, C=256, H=14, W=14, K=256, R=3, S=3, stride=1, pad=1)
SHAPES_F = [
    dict(N=2, C=8, H=9, W=11, K=5, R=3, S=3, stride=2, pad=1),
    dict(N=1, C=16, H=13, W=13, K=24, R=7, S=7, stride=2, pad=3),
    dict(N=3, C=72, H=10, W=7, K=40, R=3, S=1, stride=1, pad=0),
    dict(N=2, C=40, H=6, W=6, K=36, R=1, S=1, stride=1, pad=0),
    dict(N=4, C=64, H=1, W=1, K=48, R=1, S=1, stride=1, pad=0),  # 1 x 1 images: X and the filter need no copy
    dict(N=3, C=40, H=4, W=6, K=72, R=1, S=1, stride=1, pad=0),  # pointwise: the batched GEMM on NCHW, one A
    dict(N=1, C=16, H=2, W=4, K=24, R=1, S=1, stride=1, pad=0),  # pointwise, one image: a plain GEMM
    dict(N=2, C=32, H=8, W=5, K=64, R=5, S=3, stride=1, pad=2),
    dict(N=3, C=128, H=7, W=7, K=16, R=3, S=3, stride=3, pad=1),
    dict(N=5, C=64, H=15, W=9, K=136, R=3, S=3, stride=1, pad=1),  # M over two 64-row tiles and a tail
]
SHAPES = [cc.make_workload("conv2d", dict(p, dtype=dt)) for p in SHAPES_F for dt in HALF_TYPES]
LAYERS = [cc.make_workload("conv2d", dict(LAYER, dtype=dt)) for dt in HALF_TYPES]
CONFIGS = [
    dict(bm=64, bn=64, stages=2, consumers=1, persistent=False, group_m=1),
    dict(bm=128, bn=192, stages=3, consumers=2, persistent=True, group_m=4),
    dict(bm=64, bn=256, stages=4, consumers=1, persistent=True, group_m=1),
    dict(bm=256, bn=128, stages=3, consumers=2, persistent=False, group_m=8),
    dict(bm=128, bn=128, stages=8, consumers=1, persistent=True, group_m=16),
]


def configs(w, target) -> list[dict]:
    """The default, then the listed configs valid for `w` (small shapes cap the tiles)."""
    space = cc.get_space(w, target)
    return [cc.default_config(w, target)] + [c for c in CONFIGS if space.is_valid(c)]
