"""conv2d with each implicit-GEMM gather compiles with nvcc (no GPU) for sm_80 and sm_90a on the shapes of
tests/conv_gather_cases; the default of the 14x14x256 3x3 layer (gather=table) and its hoist/div variants keep
everything in registers (ptxas -v: no stack frame, no spills) with room for the blocks the model assumes."""
from __future__ import annotations

import pytest

import compiler_core as cc
from compiler_core.codegen import generate_source
from compiler_core.schedules.cuda import conv2d, gemm_simt_default
from tests.conv_gather_cases import SHAPES, configs
from tests.nvcc.compile_together import compile_together, registers_without_spills

pytestmark = pytest.mark.nvcc
ARCHS = ("sm_80", "sm_90a")
LAYER = cc.make_workload("conv2d", dict(N=32, C=256, H=14, W=14, K=256, R=3, S=3, stride=1, pad=1))


@pytest.mark.parametrize("arch", ARCHS)
def test_every_gather_compiles(arch):
    target = cc.cuda_target(arch)
    cases = [(w, c) for w in SHAPES for c in configs(w, target)]
    compile_together(cases, [cc.lower(w, c, target) for w, c in cases], target)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("gather", ["table", "hoist", "div"])
def test_the_layer_default_does_not_spill(arch, gather):
    """The implicit form's default in each gather mode (the explicit form: below)."""
    target = cc.cuda_target(arch, sm_count=132)
    config = dict(gemm_simt_default.default_config(conv2d.problem(LAYER), target), gather=gather, im2col="implicit")
    module = cc.lower(LAYER, config, target)
    registers = registers_without_spills(generate_source(module, target), arch)
    assert registers <= min(255, 65536 // (2 * module.kernels[0].block[0]))


@pytest.mark.parametrize("arch", ARCHS)
def test_the_explicit_im2col_default_does_not_spill(arch):
    """The explicit form with the plain GEMM's default over the copy."""
    from compiler_core.schedules.cuda import conv2d_im2col

    target = cc.cuda_target(arch, sm_count=132)
    gemm = gemm_simt_default.default_config(conv2d_im2col.problem(LAYER, conv2d.problem(LAYER))[0], target)
    config = dict(gemm, gather="div", im2col="explicit")
    module = cc.lower(LAYER, config, target)
    assert [k.name for k in module.kernels] == ["conv2d_im2col", "conv2d_simt"]
    registers = registers_without_spills(generate_source(module, target), arch)
    assert registers <= min(255, 65536 // (2 * module.kernels[1].block[0]))
