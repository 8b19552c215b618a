"""Half-precision conv2d on tensor cores (WMMA with a gathered im2col B) runs exactly on a GPU through cc.build:
tests/conv_tensor_core_cases' shapes and configs in float16 and bfloat16, against the float64 numpy reference,
output poisoned with NaN first. Marked gpu: skipped without CUDA."""
from __future__ import annotations

import numpy as np
import pytest

import compiler_core as cc
from compiler_core.dtypes import numpy_dtype
from tests.conv_tensor_core_cases import LAYERS, SHAPES, configs

pytestmark = pytest.mark.gpu


def _target():
    from compiler_core.runtime.cuda_runtime import device_arch

    return cc.cuda_target(device_arch())


def _failures(w, target, cfgs) -> list:
    inputs = cc.random_inputs(w, seed=5)
    expected = cc.expect(w, inputs)
    specs = cc.get_op(w.op).tensor_specs(w)[len(inputs):]
    failures = []
    for config in cfgs:
        kernel = cc.build(w, config, target)
        outs = [np.full(s.shape, np.nan, dtype=numpy_dtype(s.dtype)) for s in specs]
        kernel(*inputs, *outs)
        result = cc.verify(w, outs, expected)
        if not result.ok:
            failures.append((config, result.message))
    return failures


@pytest.mark.parametrize("w", SHAPES + LAYERS, ids=lambda w: w.key)
def test_tensor_core_conv_matches_the_reference_on_gpu(w):
    target = _target()
    assert {"block_m", "bm"} & set(cc.default_config(w, target)), "half conv2d should take a tensor-core template"
    assert not _failures(w, target, configs(w, target))
