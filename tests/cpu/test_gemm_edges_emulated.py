"""The generated CUDA of the float32 SIMT GEMM, run on the CPU (tests/cpu/cuda_emulation.py: a fiber per CUDA thread,
barriers that order them, AddressSanitizer and UndefinedBehaviorSanitizer), is exact on small odd shapes for every
path: interior and edge blocks, a partial k tile first, split-K with a shorter last split, 128-bit loads.
Out-of-range or misaligned accesses and barriers not every thread reaches fail the run. Planted mutations (edge
blocks run the unchecked path; the partial k tile is not checked) must fail, so the check can fail. The GPU tier
(tests/gpu/test_gemm_edges_gpu.py) runs the large shapes on a device."""
from __future__ import annotations

import pytest

import compiler_core as cc
from compiler_core.schedules.cuda import gemm_simt_kernel
from compiler_core.schedules.cuda.gemm_simt_edges import Blocks, Checks, KTiles
from tests.cpu.cuda_emulation import compiler_available, emulated_failures
from tests.gemm_edge_cases import configs_for

pytestmark = pytest.mark.skipif(not compiler_available(), reason="g++ not on PATH")
SM90 = cc.cuda_target("sm_90")


def _w(op, **params):
    return cc.make_workload(op, params)


SMALL_ODD = [
    _w("matmul", M=17, N=33, K=65),  # nothing divides: scalar loads, edges in m, n and k
    _w("matmul", M=130, N=260, K=44),  # 128-bit A and B, one row and one column of edge blocks, K % 8 = 4
    _w("matmul", M=1, N=100, K=37),  # no interior block at all
    _w("matmul", M=100, N=1, K=40),
    _w("batch_matmul", batch=3, M=33, N=20, K=67),
    _w("conv2d", N=2, C=3, H=9, W=11, K=5, R=3, S=3, stride=2, pad=1),  # im2col gather with zero padding
    _w("conv2d", N=2, C=16, H=6, W=6, K=36, R=1, S=1, stride=1, pad=0),  # pointwise: 128-bit gather, P*Q = 36
]


def _failures(w, configs) -> list:
    return emulated_failures(w, configs, SM90, cc.random_inputs(w, seed=11))


@pytest.mark.parametrize("w", SMALL_ODD, ids=lambda w: w.key)
def test_odd_shapes_are_exact_when_emulated(w):
    configs = configs_for(w, SM90, samples=2)
    failures = _failures(w, configs)
    assert not failures, f"{len(failures)} of {len(configs)} configs fail: {failures}"


MUTATION_CASE = (_w("matmul", M=130, N=260, K=44),
                 dict(BM=128, BN=128, BK=8, TM=8, TN=8, pad=4, vec=4, double_buffer=1, unroll_k=8, split_k=1))


def test_edge_blocks_without_checks_fail(monkeypatch):
    """Every block runs the unchecked path: the edge blocks read past A and B (or wrong rows) and write past C."""
    monkeypatch.setattr(gemm_simt_kernel, "split_blocks", lambda *args: Blocks(None, 1.0, Checks(), Checks()))
    assert _failures(MUTATION_CASE[0], [MUTATION_CASE[1]])


def test_an_unchecked_partial_k_tile_fails(monkeypatch):
    """The first k tile (k = 40..47 of K = 44) loads without its k check: it reads the next row of A."""
    real = gemm_simt_kernel.k_tiles

    def unchecked(*args):
        kt = real(*args)
        return KTiles(kt.count, kt.count_after_first, kt.first, kt.offset, False, kt.BK)

    monkeypatch.setattr(gemm_simt_kernel, "k_tiles", unchecked)
    assert _failures(MUTATION_CASE[0], [MUTATION_CASE[1]])
