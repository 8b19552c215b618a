"""Half-precision conv2d on tensor cores (WMMA with a gathered im2col B) runs exactly on a GPU through cc.build:
tests/conv_tensor_core_cases' shapes and configs in float16 and bfloat16, against the float64 numpy reference,
output poisoned with NaN first. Marked gpu: skipped without CUDA."""
from __future__ import annotations

import pytest

import compiler_core as cc
from tests.conv_tensor_core_cases import LAYERS, SHAPES, configs
from tests.gpu.reference_runs import failures

pytestmark = pytest.mark.gpu


def _target():
    from compiler_core.runtime.cuda_runtime import device_arch

    return cc.cuda_target(device_arch())


@pytest.mark.parametrize("w", SHAPES + LAYERS, ids=lambda w: w.key)
def test_tensor_core_conv_matches_the_reference_on_gpu(w):
    target = _target()
    assert {"block_m", "bm"} & set(cc.default_config(w, target)), "half conv2d should take a tensor-core template"
    assert not failures(w, target, configs(w, target), 5)
