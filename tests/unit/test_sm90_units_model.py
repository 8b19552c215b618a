"""The Hopper GEMM's batched and split-K work units (codegen/sm90_gemm_units.py), run in numpy (tests/sm90_unit_model:
the kernel's formulas written again) against numpy's matmul: every unit's tile, batch entry and K range, its
slice of the partials and the split-K sum give A @ B exactly on odd shapes, every partial element is written by
exactly one unit (the workspace needs no memset), and the module gemm_sm90 lowers to has the model's units, maps,
workspace and sum. That the rendered CUDA walks these units: tests/cpu/test_sm90_units_emulated.py."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import compiler_core as cc
from compiler_core.ir.opaque import OpaqueKernel
from compiler_core.runtime.tensor_map import spec_of
from tests.sm90_unit_model import CASES, UnitCase, operands, run, walk

H100 = cc.cuda_target("sm_90a", sm_count=132)


@pytest.mark.parametrize("case", CASES, ids=UnitCase.short)
def test_the_units_compute_the_batched_gemm(case):
    A, B = operands(case)
    C, writes = run(case, A, B)
    np.testing.assert_array_equal(C, A @ B)
    assert (writes == 1).all(), f"partial elements written {sorted(set(writes.tolist()))} times"


@pytest.mark.parametrize("case", CASES, ids=UnitCase.short)
def test_every_unit_runs_once_and_the_k_ranges_partition_k(case):
    seen = {}
    for cta in range(case.ctas):
        for u in walk(case, cta):
            key = (u.m0, u.n0, u.batch, u.kb_begin)
            assert key not in seen, f"unit {key} walked twice"
            seen[key] = u.kb_end
    assert len(seen) == case.units * case.cluster
    for (m0, n0, b, _), _end in seen.items():
        ranges = sorted((kb0, kb1) for (m, n, bb, kb0), kb1 in seen.items() if (m, n, bb) == (m0, n0, b))
        assert ranges[0][0] == 0 and ranges[-1][1] == case.k_blocks
        assert all(r[1] == s[0] for r, s in zip(ranges, ranges[1:], strict=False))  # contiguous, in order
        lengths = [kb1 - kb0 for kb0, kb1 in ranges]
        assert len(ranges) == case.split_k and max(lengths) - min(lengths) <= 1 and min(lengths) >= 1


def test_a_wrong_slice_offset_is_caught():
    """The check can fail: a slice offset without the batch term sends two units' partials to one place."""
    case = CASES[3]

    def planted(c, cta):
        size = c.batch * c.M * c.N
        return [dataclasses.replace(u, c_offset=u.c_offset // size * c.M * c.N) for u in walk(c, cta)]

    A, B = operands(case)
    C, writes = run(case, A, B, planted)
    assert (writes != 1).any() and not np.array_equal(C, A @ B)


# ---- the module gemm_sm90 lowers to holds the model's numbers ------------------------------------------------
MODULE_CASES = [  # (op, params, config changes)
    ("matmul", dict(M=16, N=1024, K=4096), dict(bm=64, bn=128, split_k=4)),
    ("batch_matmul", dict(batch=3, M=128, N=200, K=520), dict(bm=128, bn=128, consumers=2, split_k=2)),
    ("batch_matmul", dict(batch=16, M=200, N=136, K=72), dict(bm=64, bn=128, split_k=1)),
]


@pytest.mark.parametrize("op, params, changes", MODULE_CASES, ids=[f"{o}-{c['split_k']}" for o, _, c in MODULE_CASES])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_the_lowered_module_has_the_models_units_maps_and_sum(op, params, changes, dtype):
    w = cc.make_workload(op, dict(params, dtype=dtype))
    config = dict(cc.default_config(w, H100), group_m=1, cluster=1, split_cluster=False, persistent=True, stages=6,
                  **changes)
    module = cc.lower(w, config, H100)
    kernel = module.kernels[0]
    batch, split = params.get("batch", 1), config["split_k"]
    case = UnitCase(params["M"], params["N"], params["K"], batch, split, config["bm"], config["bn"])
    assert isinstance(kernel, OpaqueKernel) and kernel.units == case.units
    assert kernel.profile.tiles == case.units and kernel.profile.split_k == split
    assert [p.value for p in kernel.params[3:]] == [params["M"], params["N"], params["K"]]
    a_map, b_map = (spec_of(p) for p in kernel.tensor_maps)
    M, N, K = params["M"], params["N"], params["K"]
    if batch > 1:  # 3-D maps, the batch outermost with a box of one entry
        assert (a_map.dims, a_map.box) == ((K, M, batch), (64, config["bm"], 1))
        assert (b_map.dims, b_map.box) == ((N, K, batch), (64, 64, 1))
        assert a_map.strides == (K * 2, M * K * 2) and b_map.strides == (N * 2, K * N * 2)
    else:
        assert (a_map.dims, b_map.dims) == ((K, M), (N, K))
    out = module.args[2]
    assert out.dtype == dtype and out.shape == ((batch,) if op == "batch_matmul" else ()) + (M, N)
    if split == 1:
        assert len(module.kernels) == 1 and not module.workspaces and kernel.params[2] is out
        return
    (ws,) = module.workspaces
    assert ws.dtype == "float32" and ws.shape == (split * batch * M * N,) and module.overwrites_workspaces
    assert kernel.params[2] is ws and "_f32_" in kernel.name and f"_sk{split}" in kernel.name
    total = module.kernels[1]
    assert total.name == f"{op}_splitk_sum" and total.params == (ws, out)
    assert total.grid[0] * total.block[0] >= batch * M * N


def test_the_sum_kernel_adds_the_slices_in_order():
    """split_k_sum's IR reads slice s at s * size + e: the layout the model's c_offset writes."""
    from compiler_core.codegen import generate_source

    w = cc.make_workload("matmul", dict(M=16, N=1024, K=4096, dtype="float16"))
    module = cc.lower(w, dict(cc.default_config(w, H100), split_k=4, split_cluster=False, persistent=True), H100)
    source = generate_source(module.with_kernels(module.kernels[1:]), H100)
    for s in (1, 2, 3):
        assert f"{s * 16 * 1024}" in source
    assert "__float2half" in source  # narrowed once, as stored


@pytest.mark.parametrize("case", [c for c in CASES if c.split_cluster], ids=UnitCase.short)
def test_a_clusters_ctas_take_one_tiles_k_ranges_in_rank_order(case):
    """split_cluster: CTA rank r of each cluster (consecutive CTAs) holds K range r of one tile, whose output is the
    batch entry's C itself."""
    for first in range(0, case.ctas, case.split_k):
        units = [walk(case, cta) for cta in range(first, first + case.split_k)]
        assert all(len(u) == 1 for u in units)
        tiles = {(u[0].m0, u[0].n0, u[0].batch, u[0].c_offset) for u in units}
        assert len(tiles) == 1 and [u[0].split for u in units] == list(range(case.split_k))
        assert units[0][0].c_offset == units[0][0].batch * case.M * case.N
