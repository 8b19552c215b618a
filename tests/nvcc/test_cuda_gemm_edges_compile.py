"""The SIMT GEMM's interior/edge paths compile with nvcc (no GPU) for sm_80 and sm_90 on odd shapes: every
odd matmul, batch_matmul and conv2d shape of tests/gemm_edge_cases with its default, the path configs its space
holds and a sampled one; the defaults of 1000^3 and 4097x4095x1000 (two copies of the k loop in one kernel)
keep their accumulators in registers, with room for two blocks per SM."""
from __future__ import annotations

import pytest

import compiler_core as cc
from compiler_core.codegen import generate_source
from tests.gemm_edge_cases import ODD_MATMULS, ODD_WORKLOADS, configs_for
from tests.nvcc.compile_together import compile_together, registers_without_spills

pytestmark = pytest.mark.nvcc
ARCHS = ("sm_80", "sm_90")


@pytest.mark.parametrize("arch", ARCHS)
def test_odd_shapes_compile(arch):
    target = cc.cuda_target(arch)
    cases = [(w, c) for w in ODD_WORKLOADS for c in configs_for(w, target, samples=1)]
    compile_together(cases, [cc.lower(w, c, target) for w, c in cases], target)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("w", ODD_MATMULS[:2], ids=lambda w: w.key)
def test_odd_defaults_keep_accumulators_in_registers(arch, w):
    target = cc.cuda_target(arch)
    module = cc.lower(w, cc.default_config(w, target), target)
    threads = module.kernels[0].block[0]
    registers = registers_without_spills(generate_source(module, target), arch)
    assert registers <= min(255, 65536 // (2 * threads)), f"{registers} registers: two blocks no longer fit an SM"
