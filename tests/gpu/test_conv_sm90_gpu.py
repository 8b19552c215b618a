"""Half-precision conv2d through Hopper's TMA im2col + wgmma kernel runs exactly on an sm_90 GPU through cc.build:
tests/conv_sm90_cases' shapes and configs in float16 and bfloat16 against the float64 numpy reference, outputs
poisoned with NaN first. Marked gpu: skipped without CUDA; skipped on GPUs without wgmma."""
from __future__ import annotations

import pytest

from tests.conv_sm90_cases import LAYERS, SHAPES, configs
from tests.gpu.reference_runs import failures

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def target():
    from compiler_core.runtime.cuda_runtime import device_target

    t = device_target(0)
    if not t.has_tensor_cores("wgmma"):
        pytest.skip(f"{t.arch} has no wgmma")
    return t


@pytest.mark.parametrize("w", SHAPES + LAYERS, ids=lambda w: w.key)
def test_hopper_conv_matches_the_reference_on_gpu(w, target):
    cfgs = configs(w, target)
    assert all("bm" in c for c in cfgs), "half conv2d with C % 8 == 0 should take the Hopper template"
    assert not failures(w, target, cfgs, 7)
