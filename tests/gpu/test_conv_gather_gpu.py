"""conv2d with each implicit-GEMM gather runs exactly on a GPU through cc.build: the shapes of
tests/conv_gather_cases (every gather mode, split-K, partial k tiles) and the 14x14x256 3x3 layer's default,
against the float64 numpy reference, output poisoned with NaN first. Marked gpu: skipped without CUDA."""
from __future__ import annotations

import pytest

import compiler_core as cc
from tests.conv_gather_cases import SHAPES, configs, explicit_configs
from tests.gpu.reference_runs import failures

pytestmark = pytest.mark.gpu
LAYER = cc.make_workload("conv2d", dict(N=32, C=256, H=14, W=14, K=256, R=3, S=3, stride=1, pad=1))


def _target():
    from compiler_core.runtime.cuda_runtime import device_arch

    return cc.cuda_target(device_arch())


@pytest.mark.parametrize("w", SHAPES, ids=lambda w: w.key)
def test_every_gather_matches_the_reference_on_gpu(w):
    target = _target()
    assert not failures(w, target, configs(w, target), 3)


@pytest.mark.parametrize("w", SHAPES, ids=lambda w: w.key)
def test_the_explicit_im2col_copy_matches_the_reference_on_gpu(w):
    target = _target()
    assert not failures(w, target, explicit_configs(w, target), 3)


@pytest.mark.parametrize("gather", ["table", "hoist", "div"])
def test_the_layer_matches_the_reference_on_gpu(gather):
    target = _target()
    assert not failures(LAYER, target, [dict(cc.default_config(LAYER, target), gather=gather, im2col="implicit")], 3)
