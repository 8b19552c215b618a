"""Odd GEMM shapes and configs shared by the SIMT GEMM edge tests (unit, nvcc and gpu tiers).

Shapes whose tiles never divide them (M, N, K not multiples of any tile size, N or K not multiples of 4, M or
N of 1) and conv2d shapes with padding and stride; configs that exercise each path of the template: double
buffering or not, split_k with a partial k tile on the last split only, 128-bit loads where the layout allows,
idle loader threads.
"""
from __future__ import annotations

import random

import compiler_core as cc
from compiler_core.schedules.cuda.gemm_simt_gather import GATHERS


def _w(op, **params):
    return cc.make_workload(op, params)


def _cfg(BM, BN, BK, TM, TN, pad=4, vec=4, db=1, unroll=8, split=1):
    return dict(BM=BM, BN=BN, BK=BK, TM=TM, TN=TN, pad=pad, vec=vec, double_buffer=db, unroll_k=unroll,
                split_k=split)


ODD_MATMULS = [
    _w("matmul", M=1000, N=1000, K=1000),
    _w("matmul", M=4097, N=4095, K=1000),
    _w("matmul", M=1, N=4096, K=4096),
    _w("matmul", M=4096, N=1, K=4096),
    _w("matmul", M=17, N=33, K=65),
]
ODD_BATCHED = [
    _w("batch_matmul", batch=3, M=17, N=33, K=65),
    _w("batch_matmul", batch=2, M=129, N=255, K=1001),
]
ODD_CONVS = [
    _w("conv2d", N=2, C=3, H=9, W=11, K=5, R=3, S=3, stride=2, pad=1),
    _w("conv2d", N=3, C=17, H=15, W=13, K=33, R=3, S=3, stride=1, pad=1),
    _w("conv2d", N=2, C=20, H=7, W=9, K=30, R=1, S=1, stride=1, pad=0),  # pointwise, P*Q = 63: scalar gather
    _w("conv2d", N=2, C=16, H=14, W=14, K=36, R=1, S=1, stride=1, pad=0),  # pointwise, P*Q = 196: 128-bit
]
ODD_WORKLOADS = ODD_MATMULS + ODD_BATCHED + ODD_CONVS

PATH_CONFIGS = [  # each is used where the workload's space holds it (with vec=1 where 128-bit is not allowed);
    # implicit GEMMs (conv2d) take the gather modes in turn
    _cfg(128, 128, 8, 8, 8),  # the fast tile: double buffered, 8x8 per thread
    _cfg(64, 128, 16, 8, 8, pad=0, db=0, unroll=4, split=2),  # single stage (peeled first step), split-K
    _cfg(64, 64, 32, 4, 4, vec=1, unroll=8, split=4),  # scalar loads, 4 splits, last one shorter
    _cfg(32, 64, 16, 2, 4, unroll=16, split=2),
    _cfg(16, 32, 8, 1, 2, pad=0, vec=1, db=0, unroll=1),  # idle loader threads
    _cfg(16, 16, 8, 1, 1, db=0),
]


def configs_for(w, target, samples: int = 3, seed: int = 0) -> list[dict]:
    """The default, the path configs the space holds, then `samples` seeded random valid configs; no repeats."""
    space = cc.get_space(w, target)
    out = [cc.default_config(w, target)]
    gathers = GATHERS if "gather" in space.names else (None,)
    for n, c in enumerate(PATH_CONFIGS):
        c = c if gathers[0] is None else dict(c, gather=gathers[n % len(gathers)])  # every mode on some path
        for candidate in (c, dict(c, vec=1)):
            if space.is_valid(candidate):
                out.append(candidate)
                break
    out += space.sample(random.Random(seed + sum(map(ord, w.key))), samples)
    unique = {cc.config_key(c): c for c in out}
    return list(unique.values())
