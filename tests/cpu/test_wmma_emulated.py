"""The generated CUDA of the tensor-core templates for Ampere (sm_80: WMMA 16x16x16 fragments fed by cp.async
pipelines), run on the CPU through the CUDA emulator (tests/cpu/cuda_emulation.py: each lane holds a whole
fragment, stores write the lane's own accumulator elements, a cp.async copy lands at the wait that covers it),
matches the numpy reference on odd and aligned shapes in float16 and bfloat16, for the GEMM, the batched GEMM and
the implicit-GEMM conv2d, through every value of every knob. Planted mutations (the cp.async wait dropped, each
barrier dropped) must fail, so the check can fail. The GPU tier runs the same kernels on a device."""
from __future__ import annotations

import pytest

import compiler_core as cc
from tests.cpu.cuda_emulation import (
    BARRIER,
    compiler_available,
    drop_barrier,
    emulated_failures,
    kernel_source,
    mutate_kernels,
)
from tests.space_configs import covering_configs

pytestmark = pytest.mark.skipif(not compiler_available(), reason="g++ not on PATH")
SM80 = cc.cuda_target("sm_80")
WORKLOADS = [
    cc.make_workload("matmul", {"M": 17, "N": 33, "K": 65, "dtype": "float16"}),  # every edge: no async copies
    cc.make_workload("matmul", {"M": 64, "N": 128, "K": 96, "dtype": "bfloat16"}),  # aligned: cp.async tiles
    cc.make_workload("batch_matmul", {"batch": 2, "M": 33, "N": 40, "K": 48, "dtype": "float16"}),
    cc.make_workload("conv2d", {"N": 2, "C": 16, "H": 9, "W": 9, "K": 32, "R": 3, "S": 3, "stride": 1, "pad": 1,
                                "dtype": "float16"}),
]
ALIGNED = WORKLOADS[1]


@pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: w.key)
def test_every_knob_value_is_exact_when_emulated(w):
    configs = covering_configs(w, SM80)
    assert "wmma" in kernel_source(cc.lower(w, configs[0], SM80), SM80)
    failures = emulated_failures(w, configs, SM80, cc.random_inputs(w, seed=7))
    assert not failures, f"{len(failures)} of {len(configs)} configs fail: {failures}"


def test_reading_async_copies_before_their_wait_fails(monkeypatch):
    config = cc.default_config(ALIGNED, SM80)
    assert "__pipeline_memcpy_async" in kernel_source(cc.lower(ALIGNED, config, SM80), SM80)
    mutate_kernels(monkeypatch, lambda source, _: source.replace("__pipeline_wait_prior(", "(void)("))
    assert emulated_failures(ALIGNED, [config], SM80, cc.random_inputs(ALIGNED, seed=7))


def test_dropping_any_one_barrier_fails(monkeypatch):
    config = cc.default_config(ALIGNED, SM80)
    barriers = kernel_source(cc.lower(ALIGNED, config, SM80), SM80).count(BARRIER)
    assert barriers >= 3
    mutate_kernels(monkeypatch, drop_barrier)
    failures = emulated_failures(ALIGNED, [config] * barriers, SM80, cc.random_inputs(ALIGNED, seed=7))
    assert len(failures) == barriers, f"caught {len(failures)} of {barriers} dropped barriers"
