"""The float32 SIMT GEMM template compiles with nvcc (no GPU) for sm_80 and sm_90: a config per code path;
the fast 128x128 tile keeps its accumulators in registers (ptxas reports no stack frame or spills)."""
from __future__ import annotations

import pytest

import compiler_core as cc
from compiler_core.codegen import generate_source
from tests.nvcc.compile_together import compile_together, registers_without_spills

pytestmark = pytest.mark.nvcc
ARCHS = ("sm_80", "sm_90")


def _w(op, **params):
    return cc.make_workload(op, params)


def _cfg(BM, BN, BK, TM, TN, pad=4, vec=4, db=1, unroll=8, split=1):
    return dict(BM=BM, BN=BN, BK=BK, TM=TM, TN=TN, pad=pad, vec=vec, double_buffer=db, unroll_k=unroll,
                split_k=split)


BIG = _w("matmul", M=4096, N=4096, K=4096)
ODD = _w("matmul", M=67, N=131, K=45)
BATCHED = _w("batch_matmul", batch=3, M=67, N=131, K=45)
CONV_ODD = _w("conv2d", N=2, C=3, H=9, W=11, K=5, R=3, S=3, stride=2, pad=1)
CONV_BIG = _w("conv2d", N=32, C=256, H=14, W=14, K=256, R=3, S=3, pad=1)
CASES = [  # (workload, config or None for the default): what each one exercises
    (BIG, None),  # 128x128x8, 8x8 per thread, 128-bit loads/stores, double buffering, no guards
    (BIG, _cfg(128, 64, 16, 8, 4, pad=0, db=0, unroll=4)),  # single stage, partial unroll
    (BIG, _cfg(64, 64, 32, 4, 4, split=4)),  # split-K partials + sum kernel
    (BIG, _cfg(128, 128, 8, 4, 4)),  # 1024 threads, 64-register cap
    (ODD, None),  # scalar loads, every guard
    (ODD, _cfg(32, 16, 8, 1, 8, vec=1, db=0, unroll=1, split=2)),  # idle loader threads, split-K with guards
    (BATCHED, _cfg(64, 32, 16, 2, 2, vec=1, unroll=16)),  # blockIdx.z batch
    (_w("matmul", M=64, N=128, K=45), _cfg(64, 64, 8, 4, 4)),  # 128-bit B only
    (CONV_ODD, None),  # im2col gather with padding and stride, scalar output
    (CONV_BIG, None),  # 128-bit filter loads and NCHW stores
    (CONV_BIG, _cfg(64, 128, 8, 4, 8, split=2)),
    (_w("conv2d", N=2, C=16, H=14, W=14, K=32, R=1, S=1), _cfg(32, 64, 8, 2, 4)),  # pointwise: 128-bit gather
]


def _module(w, config, target):
    return cc.lower(w, config or cc.default_config(w, target), target)


@pytest.mark.parametrize("arch", ARCHS)
def test_simt_gemm_configs_compile(arch):
    target = cc.cuda_target(arch)
    compile_together(CASES, [_module(w, config, target) for w, config in CASES], target)


@pytest.mark.parametrize("arch", ARCHS)
def test_fast_tile_keeps_accumulators_in_registers(arch):
    target = cc.cuda_target(arch)
    registers = registers_without_spills(generate_source(_module(BIG, None, target), target), arch)
    assert registers <= 128, f"{registers} registers: two 256-thread blocks no longer fit an SM"
