"""The WMMA GEMM template compiles with nvcc (no GPU) for sm_80 and sm_90: a config per code path."""
from __future__ import annotations

import dataclasses

import pytest

import compiler_core as cc
from compiler_core.codegen import generate_source
from compiler_core.errors import BuildError
from compiler_core.lower import run_passes
from compiler_core.runtime.nvcc_check import nvcc_compile
from compiler_core.schedules.cuda import gemm_wmma

pytestmark = pytest.mark.nvcc


def _w(op, **params):
    return cc.make_workload(op, dict(params, dtype="float16"))


def _cfg(bm, bn, bk, wm, wn, pad, stages, group=1):
    return dict(block_m=bm, block_n=bn, block_k=bk, warps_m=wm, warps_n=wn, pad=pad, stages=stages, group_m=group)


BIG = _w("matmul", M=4096, N=4096, K=4096)
ODD = _w("matmul", M=67, N=131, K=45)
BATCHED = _w("batch_matmul", batch=3, M=67, N=131, K=45)
CASES = [  # (workload, config or None for the default): what each one exercises
    (BIG, None),  # cp.async ring, 16-byte chunks, no guards, grouped raster
    (BIG, _cfg(128, 128, 64, 2, 4, 0, 1)),  # register-staged 128-bit copies, unpadded rows
    (BIG, _cfg(128, 128, 16, 2, 2, 8, 4, 8)),  # four-stage ring
    (ODD, None),  # 2-byte chunks through registers inside the ring, every guard
    (ODD, _cfg(64, 32, 16, 2, 1, 8, 1)),  # the same through the register-staged loop
    (BATCHED, _cfg(32, 64, 64, 1, 2, 0, 3)),  # blockIdx.z, three stages, odd shape
    (_w("batch_matmul", batch=2, M=50, N=44, K=46), _cfg(64, 64, 32, 2, 2, 8, 2)),  # 8-byte B, 4-byte A chunks
]


def _module(w, config, target):
    config = config or gemm_wmma.default_config(w, target)
    module = gemm_wmma.schedule(w, gemm_wmma.space(w, target).validate(config), target)
    module = run_passes(module, target)
    return module


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_wmma_configs_compile(arch):
    target = cc.cuda_target(arch)
    modules = [_module(w, config, target) for w, config in CASES]
    renamed = [m.with_kernels(dataclasses.replace(k, name=f"{k.name}_{i}") for k in m.kernels)
               for i, m in enumerate(modules)]
    try:
        nvcc_compile("\n".join(generate_source(m, target) for m in renamed), arch)
    except BuildError:
        for (w, config), m in zip(CASES, modules, strict=True):  # name the offender
            try:
                nvcc_compile(generate_source(m, target), arch)
            except BuildError as exc:
                pytest.fail(f"{arch}: {w.key} {config} does not compile:\n{exc}")
        raise
