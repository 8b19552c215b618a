"""The float32 SIMT GEMM template (matmul, batch_matmul, conv2d): space constraints and lowered IR, no compiler."""
from __future__ import annotations

import random

import pytest

import compiler_core as cc
from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.visitor import walk
from compiler_core.schedules.cuda import conv2d, gemm_simt, matmul

SM90 = cc.cuda_target("sm_90")
BIG = cc.make_workload("matmul", dict(M=4096, N=4096, K=4096))
ODD = cc.make_workload("matmul", dict(M=67, N=131, K=45))
BATCHED = cc.make_workload("batch_matmul", dict(batch=3, M=67, N=131, K=45))
CONV_ODD = cc.make_workload("conv2d", dict(N=2, C=3, H=9, W=11, K=5, R=3, S=3, stride=2, pad=1))
CONV_BIG = cc.make_workload("conv2d", dict(N=32, C=256, H=14, W=14, K=256, R=3, S=3, pad=1))
POINTWISE = cc.make_workload("conv2d", dict(N=2, C=16, H=14, W=14, K=32, R=1, S=1))
WORKLOADS = (BIG, ODD, BATCHED, CONV_ODD, CONV_BIG, POINTWISE)

FAST = dict(BM=128, BN=128, BK=8, TM=8, TN=8, pad=4, vec=4, double_buffer=1, unroll_k=8, split_k=1)


def _cfg(**changes) -> dict:
    return dict(FAST, **changes)


def _problem(w):
    return (conv2d if w.op == "conv2d" else matmul).problem(w)


def _nodes(node, kind) -> list:
    found = []
    walk(node, lambda n: found.append(n) if isinstance(n, kind) else None)
    return found


def test_the_knobs_are_the_documented_ones():
    space = cc.get_space(BIG, SM90)
    assert space.names == ["BM", "BN", "BK", "TM", "TN", "pad", "vec", "double_buffer", "unroll_k", "split_k"]


@pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: w.key)
def test_default_config_is_valid_and_lowers(w):
    config = cc.default_config(w, SM90)
    module = cc.lower(w, config, SM90)
    gemm = [k for k in module.kernels if k.name.endswith("_simt")][0]  # after conv2d's im2col copy, if any
    assert gemm.block[0] == (config["BM"] // config["TM"]) * (config["BN"] // config["TN"])


@pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: w.key)
def test_module_args_follow_the_ops_tensor_order(w):
    """Kernels are called with the op's arrays in order: conv2d's GEMM A (the filter) is still its 2nd input."""
    module = cc.lower(w, cc.default_config(w, SM90), SM90)
    specs = cc.get_op(w.op).tensor_specs(w)
    assert [b.shape for b in module.args] == [s.shape for s in specs]
    assert [b.name.split("_", 1)[1] for b in module.args] == [s.name for s in specs]
    assert module.num_inputs == len(specs) - 1


def test_default_for_a_large_matmul_is_the_128x128_8x8_tile():
    assert cc.default_config(BIG, SM90) == FAST
    main = cc.lower(BIG, FAST, SM90).kernels[0]
    assert main.grid == (32 * 32, 1, 1) and main.block == (256, 1, 1)
    assert main.shared_bytes == 2 * 2 * 8 * (128 + 4) * 4


@pytest.mark.parametrize("M, N, K", [(1000, 1000, 1000), (4097, 4095, 1000), (128, 4096, 4096), (16, 4096, 4096),
                                     (1, 4096, 4096), (4096, 1, 4096)])
def test_defaults_fill_the_gpu_on_odd_and_skinny_shapes(M, N, K):
    """The default's tile, k depth and split_k come from a wave and latency model (gemm_simt_default): about a
    block per SM or more, never 64 blocks of 128x128 on 132 SMs (1000^3), and problems with 16 rows or fewer
    split K with a 16-row tile rather than run 16x16 blocks down all of K."""
    c = cc.default_config(cc.make_workload("matmul", dict(M=M, N=N, K=K)), SM90)
    assert -(-M // c["BM"]) * -(-N // c["BN"]) * c["split_k"] >= 128, c
    if M <= 16 or N <= 16:
        assert c["split_k"] > 1 and min(c["BM"], c["BN"]) == 16 and max(c["BM"], c["BN"]) == 128, c


@pytest.mark.parametrize("changes, why", [
    (dict(TM=1, TN=1), "threads"),  # 16384 threads
    (dict(BM=16, BN=16, TM=8, TN=8), "threads"),  # 4 threads
    (dict(BK=32), "shared"),  # 2 x 32 x 264 floats = 67.6 KB
    (dict(unroll_k=16), "unroll_k"),
    (dict(BM=64, BN=64, BK=32, TM=8, TN=8, vec=1), "loads"),  # 64 threads, 64 scalar loads each
], ids=lambda x: x if isinstance(x, str) else "")
def test_constraints_reject(changes, why):
    problems = cc.get_space(BIG, SM90).violations(_cfg(**changes))
    assert any(why in p for p in problems), problems


def test_register_estimate_bounds_large_blocks():
    space = cc.get_space(BIG, SM90)
    tl = gemm_simt.Tiling.of(_problem(BIG), _cfg(BM=128, BN=128, TM=4, TN=4))
    assert tl.threads == 1024 and tl.registers <= 64
    assert space.is_valid(_cfg(TM=4, TN=4))
    for config in space.sample(random.Random(0), 200):
        tl = gemm_simt.Tiling.of(_problem(BIG), config)
        assert tl.registers * tl.threads <= SM90.register_file


def test_vec_needs_a_contiguous_extent_that_is_a_multiple_of_4():
    assert not cc.get_space(ODD, SM90).is_valid(_cfg(BM=64, BN=64, TM=4, TN=4))  # K=45, N=131
    n_only = cc.make_workload("matmul", dict(M=64, N=128, K=45))
    tl = gemm_simt.Tiling.of(_problem(n_only), _cfg(BM=64, BN=64, TM=4, TN=4))
    assert (tl.vec_a, tl.vec_b) == (1, 4)
    assert cc.get_space(n_only, SM90).is_valid(_cfg(BM=64, BN=64, TM=4, TN=4))
    # conv2d: the filter (C*R*S = 27) is not vectorizable, the im2col gather never is unless pointwise
    assert not cc.get_space(CONV_ODD, SM90).is_valid(_cfg(BM=16, BN=32, TM=1, TN=1, vec=4))
    tl = gemm_simt.Tiling.of(_problem(CONV_BIG), FAST)
    assert (tl.vec_a, tl.vec_b) == (4, 1)
    tl = gemm_simt.Tiling.of(_problem(POINTWISE), _cfg(BM=32, BN=128, TM=2, TN=8))
    assert (tl.vec_a, tl.vec_b) == (4, 4)


def test_tiles_are_bounded_by_the_problem():
    small = cc.make_workload("matmul", dict(M=5, N=40, K=3))
    space = cc.get_space(small, SM90)
    assert {c["BM"] for c in space} == {16}
    assert {c["BN"] for c in space} == {16, 32, 64}
    assert {c["BK"] for c in space} == {8}


def test_split_k_needs_a_k_tile_per_split_and_adds_a_sum_kernel():
    space = cc.get_space(ODD, SM90)  # K=45: 6 tiles of 8, 3 of 16
    base = dict(BM=32, BN=32, BK=8, TM=2, TN=2, pad=0, vec=1, double_buffer=0, unroll_k=8)
    assert space.is_valid(dict(base, split_k=2)) and not space.is_valid(dict(base, split_k=4))
    assert not space.is_valid(dict(base, BK=16, split_k=4))
    module = cc.lower(ODD, dict(base, split_k=2), SM90)
    main, total = module.kernels
    assert [w.shape for w in module.workspaces] == [(2 * 67 * 131,)]
    assert main.grid[2] == 2 and main.params[2] is module.workspaces[0]
    assert total.params == (module.workspaces[0], module.args[2])
    assert total.grid[0] * total.block[0] >= 67 * 131


def test_double_buffering_needs_two_k_tiles():
    shallow = cc.make_workload("matmul", dict(M=64, N=64, K=8))
    space = cc.get_space(shallow, SM90)
    config = dict(BM=32, BN=32, BK=8, TM=2, TN=2, pad=0, vec=4, double_buffer=1, unroll_k=8, split_k=1)
    assert not space.is_valid(config) and space.is_valid(dict(config, double_buffer=0))


@pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: w.key)
def test_sampled_configs_lower_with_safe_barriers_and_exact_thread_loops(w):
    """Every sampled valid config passes the resource checks; the only condition around barriers is the
    interior/edge test, which reads the block's tile origin alone, and each thread-bound loop spans exactly
    the launched block, so every thread of a block reaches every barrier (tests/unit/test_cuda_gemm_edges.py
    checks the same on odd shapes by data flow)."""
    space = cc.get_space(w, SM90)
    for config in space.sample(random.Random(1), 40):
        module = cc.lower(w, config, SM90)
        for func in module.kernels:
            for branch in _nodes(func.body, S.IfThenElse):
                if _nodes(branch, S.Barrier):
                    origin = {v.name.split("_")[0] for v in _nodes(branch.cond, E.Var)}
                    assert branch.then_share is not None and origin <= {"m0", "n0"}, (config, "barrier under an if")
            for loop in _nodes(func.body, S.For):
                if loop.kind is S.ForKind.THREAD_X:
                    assert loop.extent.value == func.block[0]
            assert func.shared_bytes <= SM90.max_shared_bytes


def _global_vector_accesses(func) -> dict:
    """{buffer name: lanes} of the vector loads from and stores to global memory."""
    found = {}
    for st in _nodes(func.body, S.Store):
        if st.lanes > 1 and st.buffer.scope is S.Scope.GLOBAL:
            found[st.buffer.name] = st.lanes
        if st.lanes > 1 and isinstance(st.value, E.Load) and st.value.buffer.scope is S.Scope.GLOBAL:
            found[st.value.buffer.name] = st.value.lanes
    return found


def test_global_accesses_are_128_bit_where_the_layout_allows():
    assert _global_vector_accesses(cc.lower(BIG, FAST, SM90).kernels[0]) == {"in_A": 4, "in_B": 4, "out_C": 4}
    conv = cc.lower(CONV_BIG, FAST, SM90).kernels[0]
    assert _global_vector_accesses(conv) == {"in_Wt": 4, "out_Y": 4}  # P*Q = 196; the im2col gather is scalar
    odd = cc.lower(CONV_ODD, dict(FAST, BM=16, BN=32, TM=1, TN=2, vec=1), SM90).kernels[0]
    assert _global_vector_accesses(odd) == {}


def test_float16_dispatches_to_the_wmma_template():
    pytest.importorskip("compiler_core.schedules.cuda.gemm_wmma")
    w = cc.make_workload("matmul", dict(M=64, N=64, K=64, dtype="float16"))
    assert "BM" not in cc.get_space(w, SM90).names
