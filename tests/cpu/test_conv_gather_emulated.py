"""conv2d kernels with each implicit-GEMM gather (div, hoist, table) run on the CPU through the CUDA emulator
(tests/cpu/cuda_emulation.py: a fiber per CUDA thread, barriers that order them, ASan/UBSan) and match the numpy
reference on stride 2, pad 0-3, pointwise, 5x5 and 7x7 filters, odd C, partial k tiles and split-K. Planted
mutations (each split's table filled from k = 0; the padding test dropped from the table's entries) must fail,
so the check can fail."""
from __future__ import annotations

import pytest

import compiler_core as cc
from compiler_core.ir import expr as E
from compiler_core.schedules.cuda import gemm_simt_gather
from tests.conv_gather_cases import SHAPES, configs, explicit_configs
from tests.cpu.cuda_emulation import compiler_available, emulated_failures

pytestmark = pytest.mark.skipif(not compiler_available(), reason="g++ not on PATH")
SM90 = cc.cuda_target("sm_90")


def _failures(w, cfgs) -> list:
    return emulated_failures(w, cfgs, SM90, cc.random_inputs(w, seed=5))


@pytest.mark.parametrize("w", SHAPES, ids=lambda w: w.key)
def test_every_gather_is_exact_when_emulated(w):
    cfgs = configs(w, SM90)
    assert {c["gather"] for c in cfgs} == set(gemm_simt_gather.GATHERS) or w["R"] == 1
    failures = _failures(w, cfgs)
    assert not failures, f"{len(failures)} of {len(cfgs)} configs fail: {failures}"


PADDED = SHAPES[0]  # stride 2, pad 1, C*R*S = 27: a partial k tile
SPLIT = dict(BM=16, BN=32, BK=8, TM=1, TN=2, pad=0, vec=1, double_buffer=1, unroll_k=1, split_k=2, gather="table")


def test_a_table_filled_from_the_wrong_k_fails(monkeypatch):
    real = gemm_simt_gather.fill_table

    def from_zero(ib, g, table, k_begin, *args):
        return real(ib, g, table, E.IntImm(0), *args)

    monkeypatch.setattr(gemm_simt_gather, "fill_table", from_zero)
    assert _failures(PADDED, [SPLIT])


def test_a_table_without_the_padding_test_fails(monkeypatch):
    monkeypatch.setattr(gemm_simt_gather.Gather, "inside", lambda self, starts, shifts: None)
    assert _failures(PADDED, [dict(SPLIT, split_k=1)])


@pytest.mark.parametrize("w", SHAPES, ids=lambda w: w.key)
def test_the_explicit_im2col_copy_is_exact_when_emulated(w):
    """conv2d_im2col: the copy kernel then a plain GEMM over the workspace (no memset: the copy writes it all)."""
    cfgs = explicit_configs(w, SM90)
    assert cfgs, "the shape should hold some explicit config"
    failures = _failures(w, cfgs)
    assert not failures, f"{len(failures)} of {len(cfgs)} configs fail: {failures}"


def test_a_copy_that_skips_the_padding_test_fails(monkeypatch):
    """The copy's guard is what zeroes the padding: without it the check must fail (an out-of-range read that
    ASan reports, or wrong values)."""
    from compiler_core.ir import expr as E_

    real = E_.select
    monkeypatch.setattr(E_, "select", lambda cond, t, f: t if getattr(f, "value", None) == 0.0 else real(cond, t, f))
    (c,) = explicit_configs(PADDED, SM90)[:1]
    assert _failures(PADDED, [c])
