"""The CUDA emulator (tests/cpu/cuda_emulation.py) catches what it exists to catch: a float32 SIMT GEMM with any
one of its barriers dropped gives a wrong result, and a barrier that one thread skips is reported by name instead
of hanging. The untouched kernel, built the same way, is exact (the control)."""
from __future__ import annotations

import pytest

import compiler_core as cc
from tests.cpu.cuda_emulation import (
    BARRIER,
    build_and_run,
    compiler_available,
    drop_barrier,
    kernel_source,
    mutate_kernels,
)

pytestmark = pytest.mark.skipif(not compiler_available(), reason="g++ not on PATH")
SM90 = cc.cuda_target("sm_90")
# interior and edge blocks (130 = 128 + 2), a double-buffered k loop: four barriers in the generated source
W = cc.make_workload("matmul", {"M": 130, "N": 260, "K": 44})
CONFIG = dict(BM=128, BN=128, BK=8, TM=8, TN=8, pad=4, vec=4, double_buffer=1, unroll_k=8, split_k=1)


def test_dropping_any_one_barrier_gives_a_wrong_result(monkeypatch):
    module = cc.lower(W, CONFIG, SM90)
    barriers = kernel_source(module, SM90).count(BARRIER)
    assert barriers >= 4
    mutate_kernels(monkeypatch, lambda source, i: drop_barrier(source, i - 1) if i else source)  # 0: the control
    inputs = cc.random_inputs(W, seed=3)
    expected = cc.expect(W, inputs)
    control, *dropped = build_and_run([module] * (barriers + 1), SM90, inputs)
    assert not isinstance(control, str) and cc.verify(W, control, expected).ok, control
    caught = [isinstance(r, str) or not cc.verify(W, r, expected).ok for r in dropped]
    assert all(caught), f"barriers dropped without a wrong result: {[i for i, c in enumerate(caught) if not c]}"


def test_a_barrier_one_thread_skips_is_reported_not_hung(monkeypatch):
    def skip_in_thread_0(source: str, i: int) -> str:
        return source.replace(BARRIER, "if (threadIdx.x != 0) " + BARRIER, 1) if i else source  # 0: the control

    mutate_kernels(monkeypatch, skip_in_thread_0)
    control, skipped = build_and_run([cc.lower(W, CONFIG, SM90)] * 2, SM90, cc.random_inputs(W, seed=3),
                                     timeout_s=60)
    assert not isinstance(control, str), control
    assert isinstance(skipped, str) and "barrier divergence" in skipped, skipped
