"""Half-precision conv2d shapes and WMMA configs shared by the tensor-core conv tests (unit, nvcc and gpu tiers).

The shapes are tests/conv_gather_cases' (odd C, stride 2, pads 0-3, 7x7, pointwise, edge tiles in m, n and a
partial k step: the gathered B) and NHWC_SHAPES (C a multiple of 8: the NHWC copies and 16-byte chunks, with the
same variety of strides, pads, filters and edge tiles) in float16 and bfloat16, plus the 14x14x256 3x3 layer.
The configs walk each path: every gather mode, register-staged pipelines of 2-4 stages and the single-stage
loop, more loader threads than B columns and fewer (several j slots per thread); the NHWC path takes them
without the gather knob.
"""
from __future__ import annotations

import compiler_core as cc
from tests.conv_gather_cases import SHAPES as FLOAT_SHAPES

HALF_TYPES = ("float16", "bfloat16")
LAYER = dict(N=32, C=256, H=14, W=14, K=256, R=3, S=3, stride=1, pad=1)
NHWC_SHAPES = [
    dict(N=2, C=8, H=9, W=11, K=5, R=3, S=3, stride=2, pad=1),  # one chunk of C, K below a fragment
    dict(N=1, C=16, H=13, W=13, K=24, R=7, S=7, stride=2, pad=3),  # 7x7, pad 3
    dict(N=3, C=24, H=10, W=7, K=40, R=3, S=3, stride=1, pad=0),  # no padding: no guard; C*R*S = 216
    dict(N=2, C=40, H=6, W=6, K=36, R=1, S=1, stride=1, pad=0),  # pointwise
    dict(N=4, C=64, H=1, W=1, K=48, R=1, S=1, stride=1, pad=0),  # 1 x 1 images: X and the filter need no copy
    dict(N=2, C=32, H=8, W=8, K=64, R=5, S=5, stride=1, pad=2),  # pad 2, 5x5
]
SHAPES = [cc.make_workload("conv2d", dict(p, dtype=dt))
          for p in [w.param_dict for w in FLOAT_SHAPES] + NHWC_SHAPES for dt in HALF_TYPES]
LAYERS = [cc.make_workload("conv2d", dict(LAYER, dtype=dt)) for dt in HALF_TYPES]


def _cfg(bm, bn, bk, wm, wn, stages, gather, pad=8, group=1):
    return dict(block_m=bm, block_n=bn, block_k=bk, warps_m=wm, warps_n=wn, pad=pad, stages=stages, group_m=group,
                gather=gather)


CONFIGS = [
    _cfg(16, 32, 16, 1, 2, 2, "table"),  # 64 threads over 32 columns: two rows per load round
    _cfg(32, 64, 32, 1, 1, 3, "hoist", pad=0),  # 32 threads over 64 columns: two j slots per thread
    _cfg(16, 16, 16, 1, 1, 1, "div"),  # single stage, B through the direct path
    _cfg(32, 32, 16, 2, 2, 4, "table", group=8),  # 4 stages, raster groups
    _cfg(16, 64, 16, 1, 4, 2, "div"),
]


def configs(w, target) -> list[dict]:
    """The listed configs that are valid for `w` (small shapes cap the tiles; the NHWC path has no gather knob),
    plus the default: WMMA's, also on Hopper (where conv2d_sm90 takes the searched space, WMMA configs still build:
    heads stored before it, and C not a multiple of 8)."""
    from compiler_core.schedules.cuda import conv2d, gemm_wmma

    problem = conv2d.tensor_core_problem(w)
    space = gemm_wmma.problem_space(problem, target)
    knobs = set(space.names)
    listed = [{k: v for k, v in c.items() if k in knobs} for c in CONFIGS]
    return [gemm_wmma.problem_default(problem, target)] + [c for c in listed if space.is_valid(c)]
