"""Mutation suite on CUDA (run on the device machine): the default config of each CUDA template passes on every
input set, and the planted faults of tests/verify_mutations.py, applied to its outputs, are caught."""
from __future__ import annotations

from functools import cache

import pytest

import compiler_core as cc
from tests.verify_mutations import CASES, FAULTS, SEED, workload

pytestmark = pytest.mark.gpu


@cache
def _checked(case: str):
    from compiler_core.runtime.cuda_runtime import device_arch

    w = workload(case)
    target = cc.cuda_target(device_arch())
    kernel = cc.build(w, cc.default_config(w, target), target)
    return [(s.name, s.arrays, cc.expect(w, s.arrays), kernel.run(*s.arrays)) for s in cc.input_sets(w, SEED)]


@pytest.mark.parametrize("case", list(CASES))
def test_exact_cuda_kernel_passes_every_input_set(case):
    for name, _, expected, outputs in _checked(case):
        result = cc.verify(workload(case), outputs, expected)
        assert result.ok, f"{case} on {name}: {result.message}"


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("case", list(CASES))
def test_planted_fault_in_cuda_output_is_caught(case, fault):
    w = workload(case)
    caught = [name for name, inputs, expected, outputs in _checked(case)
              if not cc.verify(w, [FAULTS[fault](w, inputs, outputs[0]), *outputs[1:]], expected).ok]
    assert caught, f"{fault} on {case} passed every input set"
