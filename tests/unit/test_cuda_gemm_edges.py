"""Edge tiles of the float32 SIMT GEMM, read off the lowered IR (no compiler): interior blocks check and clamp
no bounds, edge code (clamped loads, checked stores) sits only under the block-uniform interior/edge branch, k
is checked only on a block's first k tile, barriers sit only under block-uniform conditions and loops, and the
k tiles of the splits cover K exactly once.

A row or column bounds check is a `<` on an index computed from the block's tile origin (m0, n0); a k check is
a `<` against K on an index that reads neither. The test shapes have K values that no tile size, load count
or trip count of the kernel equals.
"""
from __future__ import annotations

import math
import random

import pytest

import compiler_core as cc
from compiler_core.features import features
from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.visitor import walk
from compiler_core.schedules.cuda import gemm_simt_edges
from tests.gemm_edge_cases import ODD_BATCHED, ODD_CONVS, ODD_MATMULS, ODD_WORKLOADS, configs_for

SM90 = cc.cuda_target("sm_90")
BIG = cc.make_workload("matmul", dict(M=4096, N=4096, K=4096))
POINTWISE_CONVS = [w for w in ODD_CONVS if w["R"] == 1 and w["pad"] == 0]  # no padding checks in their loads


def _nodes(node, kind) -> list:
    found = []
    walk(node, lambda n: found.append(n) if isinstance(n, kind) else None)
    return found


def _gemm_dims(w) -> tuple[int, int, int]:
    """(M, N, K) of the GEMM the workload runs."""
    if w.op == "conv2d":
        from compiler_core.ops.conv2d import out_size

        P, Q = out_size(w)
        return w["K"], w["N"] * P * Q, w["C"] * w["R"] * w["S"]
    return w["M"], w["N"], w["K"]


def _thread_dependent(func) -> set:
    """Variables whose value differs between the threads of a block: threadIdx and lets computed from it."""
    dep: set = set()

    def visit(n):
        if isinstance(n, S.For) and n.kind.name.startswith("THREAD"):
            dep.add(n.var)
        elif isinstance(n, S.LetStmt) and any(v in dep for v in _nodes(n.value, E.Var)):
            dep.add(n.var)

    walk(func.body, visit)  # parents first: a let is seen before the code that uses it
    return dep


def _uniform(expr, dep: set) -> bool:
    return not any(v in dep for v in _nodes(expr, E.Var))


def _mentions(expr, origin: str) -> bool:
    """Whether expr reads the block's tile origin `origin` ("m0" or "n0", the lets named m0_<i>, n0_<i>)."""
    return any(v.name.startswith(origin + "_") for v in _nodes(expr, E.Var))


def _checks(node, origin: str) -> list:
    """Row (origin "m0") or column ("n0") bounds checks inside node: `index < limit` on an index computed from
    the tile origin. (The interior/edge test itself is a `<=`.)"""
    return [b for b in _nodes(node, E.BinOp) if b.op == "<" and _mentions(b.a, origin)]


def _k_checks(node, K: int) -> list:
    """k bounds checks: `k < K` on an index that reads no tile origin (the gather table's fill, which bounds
    its entries by K, is not a load's check)."""
    fill = {id(b) for st in _nodes(node, S.Store) if st.buffer.name.endswith("_tab") for b in _nodes(st, E.BinOp)}
    fill |= {id(b) for i in _nodes(node, S.IfThenElse) if _stores_table(i.then) for b in _nodes(i.cond, E.BinOp)}
    return [b for b in _nodes(node, E.BinOp) if b.op == "<" and isinstance(b.b, E.IntImm) and b.b.value == K
            and not _mentions(b.a, "m0") and not _mentions(b.a, "n0") and id(b) not in fill]


def _stores_table(node) -> bool:
    return any(st.buffer.name.endswith("_tab") for st in _nodes(node, S.Store))


def _clamps(node) -> list:
    """min(...) nodes: edge blocks clamp row and column indices onto the last one in range (nothing else
    in the kernel takes a min)."""
    return [b for b in _nodes(node, E.BinOp) if b.op == "min"]


def _guarded_loads(node) -> list:
    """Float selects: loads that read zero when a check fails (integer selects pick block-uniform k tiles)."""
    return [sel for sel in _nodes(node, E.Select) if sel.dtype == "float32"]


def _branch(func):
    """The interior/edge branch (the only IfThenElse with a then_share), or None."""
    branches = [b for b in _nodes(func.body, S.IfThenElse) if b.then_share is not None]
    assert len(branches) <= 1
    return branches[0] if branches else None


def _k_loops(node) -> list:
    return [f for f in _nodes(node, S.For) if f.var.name == "kt"]


def _cases(workloads, samples=3):
    return [(w, c) for w in workloads for c in configs_for(w, SM90, samples=samples)]


def _id(case) -> str:
    w, c = case
    return f"{w.key}-{c['BM']}x{c['BN']}x{c['BK']}-{c['TM']}x{c['TN']}-v{c['vec']}db{c['double_buffer']}s{c['split_k']}"


@pytest.mark.parametrize("case", _cases(ODD_WORKLOADS), ids=_id)
def test_barriers_sit_only_under_block_uniform_conditions(case):
    """Every thread of a block reaches every barrier equally often: conditions and loop extents around
    barriers never depend on threadIdx, and thread-bound loops span exactly the launched block."""
    w, config = case
    for func in cc.lower(w, config, SM90).kernels:
        dep = _thread_dependent(func)
        for branch in _nodes(func.body, S.IfThenElse):
            if _nodes(branch, S.Barrier):
                assert _uniform(branch.cond, dep), "barrier under a thread-dependent condition"
        for loop in _nodes(func.body, S.For):
            if loop.kind is S.ForKind.THREAD_X:
                assert loop.extent.value == func.block[0]
            elif _nodes(loop.body, S.Barrier):
                assert _uniform(loop.extent, dep), "barrier in a loop whose trip count depends on the thread"


@pytest.mark.parametrize("case", _cases(ODD_MATMULS + ODD_BATCHED + POINTWISE_CONVS), ids=_id)
def test_interior_blocks_check_no_bounds_and_edge_code_sits_under_the_branch(case):
    w, config = case
    M, N, K = _gemm_dims(w)
    main = cc.lower(w, config, SM90).kernels[0]
    ragged_m, ragged_n = M % config["BM"] != 0, N % config["BN"] != 0
    branch = _branch(main)
    some_interior = M >= config["BM"] and N >= config["BN"]
    if not some_interior or not (ragged_m or ragged_n):
        assert branch is None  # one path: the edge path where no block is interior, else no checks at all
        interior = None if not some_interior else main.body
    else:
        assert branch is not None and _uniform(branch.cond, _thread_dependent(main))
        interior, edge = branch.then, branch.else_
        BM, BN = config["BM"], config["BN"]
        assert branch.then_share == pytest.approx((M // BM) * (N // BN) / (math.ceil(M / BM) * math.ceil(N / BN)))
        assert bool(_checks(edge, "m0")) == ragged_m and bool(_checks(edge, "n0")) == ragged_n
        assert len(_checks(main.body, "m0")) == len(_checks(edge, "m0"))  # row checks: edge code only
        assert len(_checks(main.body, "n0")) == len(_checks(edge, "n0"))
        assert _clamps(edge) and len(_clamps(main.body)) == len(_clamps(edge))
    if interior is not None:
        assert not _checks(interior, "m0") and not _checks(interior, "n0") and not _clamps(interior)
        for guarded_load in _guarded_loads(interior):
            assert _k_checks(guarded_load.cond, K), "the interior path guards a load, not the first k tile's"
    for loop in _k_loops(main.body):
        assert not _k_checks(loop, K), "the k loop checks k: only the first k tile may"
    assert bool(_k_checks(main.body, K)) == (K % config["BK"] != 0)


@pytest.mark.parametrize("w", ODD_MATMULS[:2], ids=lambda w: w.key)
def test_the_default_interior_path_has_no_conditions_but_the_pipelines(w):
    """The fast path of 1000^3 and 4097x4095x1000: inside the k loop nothing is conditional but the
    block-uniform 'is there a next tile' test of double buffering."""
    main = cc.lower(w, cc.default_config(w, SM90), SM90).kernels[0]
    dep = _thread_dependent(main)
    (loop,) = _k_loops(_branch(main).then)
    assert not _guarded_loads(loop)
    assert all(_uniform(b.cond, dep) for b in _nodes(loop, S.IfThenElse))


def test_shapes_the_tiles_divide_have_one_path_and_no_checks():
    for config in cc.get_space(BIG, SM90).sample(random.Random(2), 30):
        main = cc.lower(BIG, config, SM90).kernels[0]
        assert _branch(main) is None
        assert not _guarded_loads(main.body) and not _clamps(main.body)
        assert not _checks(main.body, "m0") and not _checks(main.body, "n0") and not _k_checks(main.body, 4096)


@pytest.mark.parametrize("K, BK", [(1000, 8), (65, 8), (65, 16), (45, 32), (1001, 16), (7, 8), (4096, 32)])
@pytest.mark.parametrize("split", [1, 2, 4])
def test_k_tiles_of_the_splits_cover_k_once(K, BK, split):
    k_tiles = math.ceil(K / BK)
    tps = math.ceil(k_tiles / split)
    if (split - 1) * tps >= k_tiles:
        pytest.skip("not in the space: a split would have no k tile")
    starts = []
    for s in range(split):
        kt = gemm_simt_edges.k_tiles(K, BK, split, tps, E.IntImm(s) if split > 1 else E.IntImm(0))
        count = kt.count.value
        assert count >= 1
        first = kt.first.value
        starts.append(first)
        starts += [kt.k0(E.IntImm(p - 1), 1).value for p in range(1, count)]
        assert kt.check_first == (K % BK != 0)
    assert sorted(starts) == [t * BK for t in range(k_tiles)]


def test_the_partial_k_tile_runs_first_on_the_last_split_only():
    kt = gemm_simt_edges.k_tiles(65, 8, 1, 9, E.IntImm(0))
    assert kt.first.value == 64 and kt.k0(E.IntImm(0), 1).value == 0  # then 0, 8, ..., 56
    last = gemm_simt_edges.k_tiles(65, 8, 2, 5, E.IntImm(1))
    assert last.count.value == 4 and last.first.value == 64 and last.k0(E.IntImm(0), 1).value == 40
    other = gemm_simt_edges.k_tiles(65, 8, 2, 5, E.IntImm(0))
    assert other.count.value == 5 and other.first.value == 0 and other.k0(E.IntImm(0), 1).value == 8


def test_features_weigh_the_interior_and_edge_paths_by_their_share():
    """Both paths are in the code, but a launch runs each block once: the flop count stays near the op's."""
    w = ODD_MATMULS[0]
    config = cc.default_config(w, SM90)
    vec = dict(zip(cc.FEATURE_NAMES, features(w, config, SM90), strict=True))
    flops = 2 ** vec["ops.lg_flops"] - 1
    padded = 2 * math.ceil(1000 / config["BM"]) * config["BM"] * math.ceil(1000 / config["BN"]) * config["BN"] * 1000
    assert 0.95 * padded < flops < 1.2 * padded
