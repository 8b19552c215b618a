"""conv2d shapes and configs shared by the implicit-GEMM gather tests (unit, cpu-emulated, nvcc and gpu tiers).

Shapes cover what the gather's split of the im2col address must keep exact: stride 2, pad 0/1/2, pointwise
(128-bit and scalar), 7x7 filters, odd C, C*R*S not a multiple of BK (a partial k tile), and split_k with a
shorter last split (each split's table covers only its own k range).
"""
from __future__ import annotations

import compiler_core as cc
from compiler_core.schedules.cuda.gemm_simt_gather import GATHERS


def _w(**p):
    return cc.make_workload("conv2d", p)


SHAPES = [
    _w(N=2, C=3, H=9, W=11, K=5, R=3, S=3, stride=2, pad=1),  # odd C, stride 2, C*R*S = 27
    _w(N=2, C=5, H=8, W=8, K=12, R=3, S=3, stride=1, pad=0),  # no padding: no guard, no shifts in the table
    _w(N=1, C=4, H=10, W=9, K=8, R=5, S=5, stride=2, pad=2),  # pad 2, 5x5
    _w(N=2, C=3, H=13, W=13, K=8, R=7, S=7, stride=2, pad=3),  # 7x7 stem-like, C*R*S = 147
    _w(N=2, C=16, H=6, W=6, K=36, R=1, S=1, stride=1, pad=0),  # pointwise, P*Q = 36: 128-bit gather
    _w(N=2, C=7, H=5, W=7, K=9, R=1, S=1, stride=2, pad=0),  # strided pointwise, odd everything
    _w(N=3, C=17, H=7, W=7, K=33, R=3, S=3, stride=1, pad=1),  # odd C, edge blocks in m and n
]


def _cfg(BM, BN, BK, TM, TN, pad=4, vec=4, db=1, unroll=8, split=1):
    return dict(BM=BM, BN=BN, BK=BK, TM=TM, TN=TN, pad=pad, vec=vec, double_buffer=db, unroll_k=unroll,
                split_k=split)


TILES = [  # paths: double buffered, single stage, split-K (last split shorter), idle loader threads, many slots
    _cfg(64, 64, 8, 8, 8),
    _cfg(32, 64, 16, 4, 4, db=0, unroll=4, split=2),
    _cfg(16, 32, 8, 1, 2, pad=0, vec=1, split=4, unroll=1),
    _cfg(16, 16, 32, 1, 1, db=0),
    _cfg(32, 16, 16, 2, 1, vec=1, unroll=16, split=2),
    _cfg(128, 32, 8, 8, 4, vec=1),  # 128 threads over a 32-wide tile: one slot per thread; 64-wide below
    _cfg(16, 64, 8, 2, 2, vec=1, split=2),
    _cfg(16, 16, 8, 1, 1, vec=1, split=2),  # small K (pointwise): split-K where the shape allows
    _cfg(16, 32, 8, 1, 1, db=0, unroll=1),
]


def configs(w, target, gathers=GATHERS) -> list[dict]:
    """Every tile of TILES the workload's space holds (vec=1 where 128-bit is not allowed), in each gather mode
    of the implicit form, plus the default (the explicit im2col copy on most shapes: see explicit_configs)."""
    space, out = cc.get_space(w, target), [cc.default_config(w, target)]
    form = {"im2col": "implicit"} if "im2col" in space.names else {}
    for tile in TILES:
        for g in gathers:
            for c in (dict(tile, gather=g, **form), dict(tile, gather=g, vec=1, **form)):
                if space.is_valid(c):
                    out.append(c)
                    break
    return list({cc.config_key(c): c for c in out}.values())


def explicit_configs(w, target) -> list[dict]:
    """The tiles of TILES with the explicit im2col copy (conv2d_im2col: no gather; split-K where the tile has it)
    that the space holds."""
    space, out = cc.get_space(w, target), []
    for tile in TILES:
        for c in (dict(tile, gather="div", im2col="explicit"), dict(tile, gather="div", im2col="explicit", vec=1),
                  dict(tile, split_k=1, gather="div", im2col="explicit")):
            if space.is_valid(c):
                out.append(c)
                break
    return list({cc.config_key(c): c for c in out}.values())
