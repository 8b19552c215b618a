"""The WMMA GEMM template's space and lowered IR (no compiler): limits, guards, barriers, copies, raster."""
from __future__ import annotations

import random

import pytest

import compiler_core as cc
from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.visitor import substitute, walk
from compiler_core.lower import run_passes
from compiler_core.schedules.cuda import gemm_wmma, gemm_wmma_kernel, gemm_wmma_tiling

BIG = cc.make_workload("matmul", dict(M=4096, N=4096, K=4096, dtype="float16"))
ODD = cc.make_workload("matmul", dict(M=67, N=131, K=45, dtype="float16"))
BATCHED = cc.make_workload("batch_matmul", dict(batch=3, M=67, N=131, K=45, dtype="float16"))
WORKLOADS = (BIG, ODD, BATCHED)


def _lower(w, config, arch="sm_90"):
    target = cc.cuda_target(arch)
    module = gemm_wmma.schedule(w, gemm_wmma.space(w, target).validate(config), target)
    module = run_passes(module, target)
    return module.kernels[0]


def _nodes(node, kind) -> list:
    """Every node of type `kind` under `node` (a kernel's body, a statement or an expression)."""
    found = []
    root = node.body if isinstance(node, S.PrimFunc) else node
    walk(root, lambda n: found.append(n) if isinstance(n, kind) else None)
    return found


def _calls(func, name: str) -> list:
    return [c for c in _nodes(func, E.Call) if c.name == name]


def _samples(w, n=25, arch="sm_90"):
    return gemm_wmma.space(w, cc.cuda_target(arch)).sample(random.Random(w.key), n)


def test_knobs_and_sizes():
    space = gemm_wmma.space(BIG, cc.cuda_target("sm_90"))
    assert space.names == ["block_m", "block_n", "block_k", "warps_m", "warps_n", "pad", "stages", "group_m"]
    assert 1000 < sum(1 for _ in space) < space.size


@pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: w.key)
def test_default_config_is_valid_and_double_buffered_on_sm80(w):
    for arch in ("sm_80", "sm_90"):
        config = gemm_wmma.default_config(w, cc.cuda_target(arch))
        assert gemm_wmma.space(w, cc.cuda_target(arch)).is_valid(config)
        assert config["stages"] == 2
    assert gemm_wmma.default_config(w, cc.cuda_target("sm_75"))["stages"] == 1


def test_tiny_problem_still_has_configs():
    w = cc.make_workload("matmul", dict(M=1, N=1, K=1, dtype="float16"))
    target = cc.cuda_target("sm_90")
    assert gemm_wmma.space(w, target).is_valid(gemm_wmma.default_config(w, target))


def test_cp_async_needs_sm80():
    config = dict(gemm_wmma.default_config(BIG, cc.cuda_target("sm_90")), block_k=16, stages=3)
    assert not gemm_wmma.space(BIG, cc.cuda_target("sm_75")).is_valid(config)
    assert gemm_wmma.space(BIG, cc.cuda_target("sm_80")).is_valid(config)


def test_rejects_other_dtypes_and_ops():
    w32 = cc.make_workload("matmul", dict(M=64, N=64, K=64, dtype="float32"))
    with pytest.raises(cc.WorkloadError):
        gemm_wmma.space(w32, cc.cuda_target("sm_90"))


@pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: w.key)
def test_valid_configs_lower_within_every_limit(w):
    target = cc.cuda_target("sm_90")
    for config in _samples(w):
        func = _lower(w, config)
        t = gemm_wmma_tiling.Tiling.of(config)
        threads = func.block[0] * func.block[1] * func.block[2]
        assert threads == 32 * config["warps_m"] * config["warps_n"] <= target.max_threads_per_block
        assert func.shared_bytes == gemm_wmma_tiling.shared_bytes(config) <= target.max_shared_bytes
        assert func.attrs["registers_estimate"] == t.registers <= target.max_registers_per_thread
        assert t.registers * threads <= target.register_file
        m_tiles, n_tiles = -(-w["M"] // config["block_m"]), -(-w["N"] // config["block_n"])
        assert func.grid == (m_tiles * n_tiles, 1, w.get("batch", 1))


@pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: w.key)
def test_no_barrier_under_a_condition(w):
    """Every thread must reach every __syncthreads: none may sit inside an `if` (uniform or not)."""
    for config in _samples(w, 15):
        func = _lower(w, config)
        for branch in _nodes(func, S.IfThenElse):
            assert not [n for n in (branch.then, branch.else_) if n is not None and _nodes(n, S.Barrier)]
        assert _nodes(func, S.Barrier)


def test_shared_buffers_are_aligned_for_wmma():
    func = _lower(BIG, gemm_wmma.default_config(BIG, cc.cuda_target("sm_90")))
    shared = [a.buffer for a in _nodes(func, S.Allocate) if a.buffer.scope is S.Scope.SHARED]
    assert {b.name for b in shared} == {"As", "Bs", "Cs"}
    assert all(b.align >= 32 and b.nbytes % 32 == 0 for b in shared)
    for load in _calls(func, "wmma_load"):
        ldm = load.args[2].value
        assert ldm % 8 == 0


def test_divisible_shape_copies_by_cp_async_16_bytes_without_guards():
    config = dict(gemm_wmma.default_config(BIG, cc.cuda_target("sm_90")), group_m=1)
    func = _lower(BIG, config)
    copies = _calls(func, "cp_async")
    assert copies and all(c.args[2].value == 16 for c in copies)
    # the only condition left is the uniform "is there a step to prefetch" test
    conditions = _nodes(func, S.IfThenElse)
    assert len(conditions) == 1 and {v.name for v in _nodes(conditions[0].cond, E.Var)} == {"kt"}
    assert {s.buffer.name for s in _nodes(func, S.Store)} == {"out_C"}  # no register-staged or zero-fill stores


def test_register_staged_loads_are_128_bit_moves():
    config = dict(gemm_wmma.default_config(BIG, cc.cuda_target("sm_90")), stages=1)
    func = _lower(BIG, config)
    assert not _calls(func, "cp_async") and not _calls(func, "cp_async_wait")
    moves = [s for s in _nodes(func, S.Store) if s.buffer.name in ("As", "Bs")]
    assert moves and all(s.lanes == 8 for s in moves)


@pytest.mark.parametrize("K, width", [(44, 4), (46, 2), (45, 1)])
def test_chunk_width_follows_divisibility(K, width):
    w = cc.make_workload("matmul", dict(M=64, N=64, K=K, dtype="float16"))
    config = dict(block_m=64, block_n=64, block_k=32, warps_m=2, warps_n=2, pad=8, stages=2, group_m=1)
    func = _lower(w, config)
    a_copies = [c for c in _calls(func, "cp_async") if c.args[0].buffer.name == "As"]
    if width == 1:
        assert not a_copies  # 2-byte chunks move by plain loads and stores
    else:
        assert a_copies and all(c.args[2].value == 2 * width for c in a_copies)
    zero_fill = [s for s in _nodes(func, S.Store) if s.buffer.name == "As" and isinstance(s.value, E.FloatImm)]
    assert zero_fill  # K % block_k != 0: the last step's tail is zeroed


def test_odd_shape_guards_every_global_access():
    func = _lower(BATCHED, gemm_wmma.default_config(BATCHED, cc.cuda_target("sm_90")))
    guarded = set()

    def visit(node):
        if isinstance(node, S.IfThenElse):
            walk(node.then, lambda n: guarded.add(id(n)))

    walk(func.body, visit)
    global_reads = [n for n in _nodes(func, E.Load) if n.buffer.name.startswith("in_")]
    global_writes = [n for n in _nodes(func, S.Store) if n.buffer.name == "out_C"]
    assert global_reads and global_writes
    assert all(id(n) in guarded for n in global_reads + global_writes)


@pytest.mark.parametrize("m_tiles, n_tiles, group", [(32, 32, 8), (5, 3, 8), (19, 7, 8), (4, 9, 1)])
def test_raster_visits_every_tile_once(m_tiles, n_tiles, group):
    bx = E.Var("bx")
    tm, tn = gemm_wmma_kernel._raster(lambda name, value: value, bx, group, m_tiles, n_tiles)
    seen = set()
    for pid in range(m_tiles * n_tiles):
        at = {bx: E.IntImm(pid)}
        seen.add((substitute(tm, at).value, substitute(tn, at).value))
    assert seen == {(i, j) for i in range(m_tiles) for j in range(n_tiles)}


def test_bfloat16_needs_sm80_tensor_cores_and_says_so():
    w = cc.make_workload("matmul", dict(M=64, N=64, K=64, dtype="bfloat16"))
    with pytest.raises(cc.WorkloadError, match=r"bfloat16 WMMA tensor cores \(mma_bf16, sm_80 or newer\); sm_75"):
        cc.get_space(w, cc.cuda_target("sm_75"))
    assert len(cc.get_space(w, cc.cuda_target("sm_80")).sample(random.Random(0), 5)) == 5


@pytest.mark.parametrize("op", ["matmul", "batch_matmul"])
def test_bfloat16_gemm_uses_bfloat16_fragments_and_tiles(op):
    params = dict(M=67, N=131, K=45, dtype="bfloat16") | (dict(batch=2) if op == "batch_matmul" else {})
    w = cc.make_workload(op, params)
    target = cc.cuda_target("sm_80")
    module = cc.lower(w, cc.default_config(w, target), target)
    allocs = {a.buffer.name: a.buffer for a in _nodes(module.kernels[0], S.Allocate)}
    assert {allocs[n].dtype for n in ("As", "Bs", "a_frag", "b_frag")} == {"bfloat16"}
    assert allocs["acc"].dtype == "float32"
    source = cc.generate(w, cc.default_config(w, target), target)
    assert "#include <cuda_bf16.h>" in source and "16, 16, 16, __nv_bfloat16, nvcuda::wmma::row_major" in source
    assert "__float2bfloat16(" in source and "__half" not in source.replace("cuda_fp16", "")
