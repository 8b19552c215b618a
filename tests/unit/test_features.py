"""Cost-model features of the lowered IR, and the codegen version hash."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

import compiler_core as cc
from compiler_core.features import FEATURE_NAMES, OP_NAMES, extract_features, features, lg
from compiler_core.ir import Address, Buffer, FloatImm, ForKind, IntImm, IRBuilder, Module, PrimFunc, Scope, call, min_
from compiler_core.lower import run_passes
from compiler_core.version import codegen_version, source_digest

CUDA = cc.cuda_target("sm_90")
CPU = cc.cpu_target(isa="avx2", cores=2)  # pinned: unit tests do not depend on the host
ELEMENTWISE = cc.make_workload("elementwise", rows=64, cols=128, expr="relu(a+b)")
NAIVE_WORKLOADS = [
    ("matmul", dict(M=16, N=8, K=4)), ("matmul", dict(M=16, N=8, K=4, dtype="float16")),
    ("batch_matmul", dict(batch=2, M=4, N=4, K=4)),
    ("conv2d", dict(N=1, C=2, H=5, W=5, K=3, R=3, S=3, pad=1)), ("softmax", dict(rows=4, cols=9)),
    ("layernorm", dict(rows=4, cols=9)), ("reduce_sum", dict(rows=4, cols=9)), ("transpose", dict(rows=4, cols=9)),
    ("elementwise", dict(rows=4, cols=9, expr="gelu(x*w+b)", vectors="w,b")),
]


def value(vec: np.ndarray, name: str) -> float:
    return float(vec[FEATURE_NAMES.index(name)])


def lowered(body, params, target=CUDA, num_inputs=1) -> Module:
    module = Module("m", (PrimFunc("k", tuple(params), body),), tuple(params), (), num_inputs)
    module = run_passes(module, target)
    return module


# ---- shape of the vector -------------------------------------------------------------------
def test_names_are_unique_and_match_the_vector_length():
    assert len(set(FEATURE_NAMES)) == len(FEATURE_NAMES)
    vec = features(ELEMENTWISE, {"threads": 128, "items": 2}, CUDA)
    assert vec.shape == (len(FEATURE_NAMES),) and vec.dtype == np.float32
    assert all(f"wl.op.{op}" in FEATURE_NAMES for op in cc.OPS) and list(OP_NAMES) == sorted(cc.OPS)


def test_package_exports():
    assert cc.FEATURE_NAMES is FEATURE_NAMES and cc.features is features and cc.extract_features is extract_features
    assert cc.codegen_version is codegen_version


@pytest.mark.parametrize("target", [CUDA, CPU], ids=["cuda", "c"])
@pytest.mark.parametrize("op, params", NAIVE_WORKLOADS, ids=[f"{op}-{i}" for i, (op, _) in enumerate(NAIVE_WORKLOADS)])
def test_naive_kernels_of_every_op_give_finite_fixed_length_vectors(op, params, target):
    w = cc.make_workload(op, params)
    vec = features(w, {}, target, template="naive")
    assert vec.shape == (len(FEATURE_NAMES),) and np.isfinite(vec).all()
    assert value(vec, f"wl.op.{op}") == 1.0 and sum(value(vec, f"wl.op.{o}") for o in OP_NAMES) == 1.0
    assert value(vec, "tgt.is_cuda") == float(target.kind == "cuda")
    assert value(vec, "launch.num_kernels") == len(cc.lower(w, {}, target, template="naive").kernels)
    assert value(vec, "mem.global.lg_store_bytes") > 0 and value(vec, "wl.lg_bytes") > 0


def test_features_equals_extract_features_of_the_lowered_module():
    config = {"threads": 256, "items": 4}
    module = cc.lower(ELEMENTWISE, config, CUDA)
    np.testing.assert_array_equal(features(ELEMENTWISE, config, CUDA), extract_features(module, CUDA, ELEMENTWISE))


# ---- configs are told apart ------------------------------------------------------------------
@pytest.mark.parametrize("target", [CUDA, CPU], ids=["cuda", "c"])
def test_every_distinct_elementwise_kernel_gets_its_own_vector(target):
    # configs whose tiles clamp to the same kernel share a vector; distinct kernels never do
    configs = list(cc.get_space(ELEMENTWISE, target))
    kernels = {cc.generate(ELEMENTWISE, c, target): features(ELEMENTWISE, c, target).tobytes() for c in configs}
    assert len(kernels) > 1
    assert len(set(kernels.values())) == len(kernels)


def test_elementwise_cuda_launch_and_traffic_are_exact():
    vec = features(ELEMENTWISE, {"threads": 128, "items": 4}, CUDA)
    n = 64 * 128
    assert value(vec, "launch.blocks") == n // (128 * 4) and value(vec, "launch.threads_per_block") == 128
    assert value(vec, "launch.lg_threads") == 7 and value(vec, "launch.lg_block_x") == 7
    assert value(vec, "loop.unrolled.count") == 1 and value(vec, "loop.unrolled.lg_max_extent") == 2
    assert value(vec, "loop.innermost.unrolled") == 1
    # every load and store is weighted by blocks x threads x items: exactly the elements
    assert value(vec, "mem.global.lg_load_bytes") == pytest.approx(lg(2 * 4 * n))
    assert value(vec, "mem.global.lg_store_bytes") == pytest.approx(lg(4 * n))
    assert value(vec, "mem.lg_global_per_compulsory") == pytest.approx(lg(1.0))
    assert value(vec, "mem.global.coalesced_frac") == 1.0
    assert value(vec, "ops.lg_flops") == pytest.approx(lg(2 * n))  # a+b, max(., 0)
    assert value(vec, "ctrl.lg_guards") == pytest.approx(lg(n))


def test_guarded_code_counts_at_full_weight():
    w = cc.make_workload("elementwise", rows=3, cols=7, expr="relu(a+b)")
    vec = features(w, {"threads": 64, "items": 1}, CUDA)
    assert value(vec, "launch.blocks") == 1
    assert value(vec, "mem.global.lg_store_bytes") == pytest.approx(lg(4 * 64))  # 64 threads, 21 elements


def test_c_template_parallel_and_simd_loops():
    vec = features(ELEMENTWISE, {"rows_per_task": 4, "col_tile": 64, "simd": 1}, CPU)
    assert value(vec, "launch.blocks") == 16 and value(vec, "launch.threads_per_block") == 1
    assert value(vec, "loop.parallel.count") == 1 and value(vec, "loop.parallel.lg_path_product") == 4
    assert value(vec, "loop.vectorized.lg_max_extent") == 6 and value(vec, "loop.innermost.vectorized") == 1
    plain = features(ELEMENTWISE, {"rows_per_task": 4, "col_tile": 64, "simd": 0}, CPU)
    assert value(plain, "loop.vectorized.count") == 0 and value(plain, "loop.innermost.serial") == 1
    assert value(vec, "mem.global.lg_load_bytes") == value(plain, "mem.global.lg_load_bytes")


# ---- hand-built kernels ----------------------------------------------------------------------
def _staged_copy(lanes: int, stride: int = 1, blocks: int = 8, threads: int = 64, steps: int = 16) -> Module:
    n = blocks * threads * lanes * stride * steps
    g, o = Buffer("g", "float32", (n,)), Buffer("o", "float32", (blocks * threads,))
    b = IRBuilder()
    with b.loop("bx", blocks, ForKind.BLOCK_X) as bx, b.loop("tx", threads, ForKind.THREAD_X) as tx:
        with b.allocate("s", "float32", (threads * lanes,), Scope.SHARED, pad=0) as s:
            with b.allocate("acc", "float32", (1,), Scope.LOCAL) as acc:
                b.store(acc, 0, 0.0)
                with b.loop("k", steps) as k:
                    base = ((bx * steps + k) * threads) * lanes * stride
                    with b.loop("v", lanes, ForKind.VECTORIZED) as v:
                        b.store(s, tx * lanes + v, g[base + (tx * lanes + v) * stride])
                    b.barrier()
                    b.store(acc, 0, acc[0] + s[tx * lanes] * FloatImm(2.0))
                    b.barrier()
                b.store(o, bx * threads + tx, acc[0])
    return lowered(b.get(), (g, o))


def test_vector_moves_shared_memory_and_barriers():
    w = cc.make_workload("reduce_sum", rows=8, cols=64)
    vec = extract_features(_staged_copy(lanes=4), CUDA, w)
    launches = 8 * 64
    assert value(vec, "vec.max_load_lanes") == 4 and value(vec, "vec.max_store_lanes") == 4
    assert value(vec, "vec.max_access_bytes") == 16
    assert value(vec, "res.lg_shared_bytes") == pytest.approx(lg(64 * 4 * 4))
    assert value(vec, "sync.static_barriers") == 2
    assert value(vec, "sync.lg_barriers") == pytest.approx(lg(2 * 16 * launches))
    assert value(vec, "sync.lg_barriers_per_thread") == pytest.approx(lg(2 * 16))
    assert value(vec, "mem.global.lg_load_bytes") == pytest.approx(lg(16 * 16 * launches))
    assert value(vec, "mem.shared.lg_store_bytes") == pytest.approx(lg(16 * 16 * launches))
    assert value(vec, "mem.shared.lg_load_bytes") == pytest.approx(lg(4 * 16 * launches))
    assert value(vec, "mem.global.coalesced_frac") == 1.0 and value(vec, "vec.global_vector_frac") > 0.9
    assert value(vec, "loop.serial.lg_max_extent") == 4 and value(vec, "loop.innermost.serial") == 1


def test_strided_copy_is_unrolled_and_classified_strided():
    w = cc.make_workload("reduce_sum", rows=8, cols=64)
    vec = extract_features(_staged_copy(lanes=4, stride=2), CUDA, w)
    assert value(vec, "vec.max_load_lanes") == 1 and value(vec, "loop.unrolled.count") == 1
    assert value(vec, "mem.global.strided_frac") > 0.9 and value(vec, "mem.global.coalesced_frac") < 0.1


def test_shared_bank_conflicts_follow_the_thread_stride():
    def kernel(stride):
        o = Buffer("o", "float32", (32,))
        b = IRBuilder()
        with b.loop("tx", 32, ForKind.THREAD_X) as tx:
            with b.allocate("s", "float32", (32 * 32,), Scope.SHARED) as s:
                b.store(o, tx, s[tx * stride])
        return lowered(b.get(), (o,), num_inputs=0)

    w = cc.make_workload("reduce_sum", rows=1, cols=32)
    assert value(extract_features(kernel(1), CUDA, w), "mem.shared.lg_bank_conflict") == 0
    assert value(extract_features(kernel(33), CUDA, w), "mem.shared.lg_bank_conflict") == 0
    assert value(extract_features(kernel(4), CUDA, w), "mem.shared.lg_bank_conflict") == 2
    assert value(extract_features(kernel(32), CUDA, w), "mem.shared.lg_bank_conflict") == 5


def test_both_branches_of_a_guard_are_counted():
    x, y = Buffer("x", "float32", (256,)), Buffer("y", "float32", (256,))
    b = IRBuilder()
    with b.loop("tx", 256, ForKind.THREAD_X) as tx:
        with b.if_else(tx < 10) as otherwise:
            b.store(y, tx, x[tx])
            otherwise()
            b.store(y, tx, x[tx] * FloatImm(3.0) + FloatImm(1.0))
    vec = extract_features(lowered(b.get(), (x, y)), CUDA, cc.make_workload("reduce_sum", rows=1, cols=256))
    assert value(vec, "mem.global.lg_store_bytes") == pytest.approx(lg(2 * 256 * 4))
    assert value(vec, "mem.global.lg_load_bytes") == pytest.approx(lg(2 * 256 * 4))
    assert value(vec, "ops.lg_flops") == pytest.approx(lg(2 * 256))
    assert value(vec, "ctrl.static_guards") == 1 and value(vec, "ctrl.lg_guards") == pytest.approx(lg(256))


def test_unroll_factors_registers_and_depth():
    o = Buffer("o", "float32", (64,))
    b = IRBuilder()
    with b.loop("tx", 64, ForKind.THREAD_X) as tx:
        with b.allocate("acc", "float32", (8, 4), Scope.LOCAL) as acc:
            with b.loop("i", 8, ForKind.UNROLLED) as i, b.loop("j", 4, ForKind.UNROLLED) as j:
                b.store(acc, (i, j), FloatImm(1.0))
            with b.loop("j2", 4, ForKind.UNROLLED) as j2:
                b.store(o, tx, acc[0, j2])
    vec = extract_features(lowered(b.get(), (o,), num_inputs=0), CUDA, cc.make_workload("reduce_sum", rows=1,
                                                                                          cols=64))
    assert value(vec, "loop.unrolled.count") == 3
    assert value(vec, "loop.unrolled.lg_max_extent") == 3 and value(vec, "loop.unrolled.lg_path_product") == 5
    assert value(vec, "loop.max_depth") == 3
    assert value(vec, "res.registers") == 24 + 32 and value(vec, "res.lg_local_bytes") == pytest.approx(lg(128))
    assert value(vec, "res.registers_frac") == pytest.approx(56 / 255)


def _block_2d(index) -> Module:
    """8 x 4 threads (one warp) read g[index(tx, ty)]."""
    g, o = Buffer("g", "float32", (1 << 16,)), Buffer("o", "float32", (32,))
    b = IRBuilder()
    with b.loop("ty", 4, ForKind.THREAD_Y) as ty, b.loop("tx", 8, ForKind.THREAD_X) as tx:
        b.store(o, ty * 8 + tx, g[index(tx, ty)])
    return lowered(b.get(), (g, o))


def test_warp_lanes_span_thread_y_when_x_is_narrow():
    w = cc.make_workload("reduce_sum", rows=1, cols=32)
    rows = extract_features(_block_2d(lambda tx, ty: ty * 1024 + tx), CUDA, w)  # 4 rows x 32 contiguous bytes
    assert value(rows, "mem.global.coalesced_frac") == 1.0 and value(rows, "mem.global.sector_efficiency") == 1.0
    # 8 columns of 4 consecutive floats: 8 sectors touched where 4 would hold the 128 bytes
    cols = extract_features(_block_2d(lambda tx, ty: tx * 1024 + ty), CUDA, w)
    assert value(cols, "mem.global.strided_frac") == 0.5  # the load; the store stays coalesced
    assert value(cols, "mem.global.sector_efficiency") == pytest.approx((0.5 + 1.0) / 2)


def test_data_dependent_indices_are_unknown_and_broadcasts_invariant():
    idx, g, o = Buffer("idx", "int32", (32,)), Buffer("g", "float32", (64,)), Buffer("o", "float32", (32,))
    b = IRBuilder()
    with b.loop("tx", 32, ForKind.THREAD_X) as tx:
        b.store(o, tx, g[idx[tx]] + g[5])
    vec = extract_features(lowered(b.get(), (idx, g, o), num_inputs=2), CUDA,
                           cc.make_workload("reduce_sum", rows=1, cols=32))
    per = 32 * 4  # bytes of each of the four accesses
    assert value(vec, "mem.global.unknown_frac") == pytest.approx(per / (4 * per))
    assert value(vec, "mem.global.invariant_frac") == pytest.approx(per / (4 * per))
    assert value(vec, "mem.global.coalesced_frac") == pytest.approx(2 * per / (4 * per))


def test_non_constant_extents_count_at_their_upper_bound():
    o = Buffer("o", "float32", (16,))
    b = IRBuilder()
    with b.loop("jt", 3) as jt:  # tile of 4 over 10 columns: extents 4, 4, 2
        with b.let("n", min_(10 - jt * 4, 4)) as n:
            with b.loop("j", n) as j:
                b.store(o, jt * 4 + j, 1.0)
    vec = extract_features(lowered(b.get(), (o,), CPU, num_inputs=0), CPU,
                           cc.make_workload("reduce_sum", rows=1, cols=16))
    assert value(vec, "loop.dynamic_extents") == 1
    assert value(vec, "mem.global.lg_store_bytes") == pytest.approx(lg(3 * 4 * 4))
    assert value(vec, "loop.serial.lg_max_extent") == 2


@pytest.mark.parametrize("target", [CUDA, CPU], ids=["cuda", "c"])
def test_register_feature_follows_register_estimate(target):
    from compiler_core.passes.verify_resources import register_estimate

    cases = [(cc.make_workload(op, params), {}, "naive") for op, params in NAIVE_WORKLOADS]
    cases += [(ELEMENTWISE, c, "tuned") for c in list(cc.get_space(ELEMENTWISE, target))[:3]]
    for w, config, template in cases:
        module = cc.lower(w, config, target, template)
        expected = max(register_estimate(f) for f in module.kernels)
        assert value(extract_features(module, target, w), "res.registers") == expected
    o = Buffer("o", "float32", (4,))
    b = IRBuilder()
    with b.allocate("r", "float32x8", (3,), Scope.LOCAL), b.allocate("h", "float16", (5,), Scope.LOCAL):
        with b.allocate("f", "float16", (1,), Scope.WMMA_ACC), b.allocate("s", "float32", (64,), Scope.SHARED):
            b.store(o, 0, 1.0)
    module = Module("m", (PrimFunc("k", (o,), b.get()),), (o,), (), 0)  # not lowered: no attrs
    assert value(extract_features(module, target, ELEMENTWISE), "res.registers") == \
        register_estimate(module.kernels[0]) == 24 + 24 + 3 + 8


def test_intrinsics_count_as_traffic_and_work():
    a, g = Buffer("a", "float16", (4096,)), Buffer("g", "float32", (4096,))
    b = IRBuilder()
    with b.loop("bx", 2, ForKind.BLOCK_X), b.loop("tx", 32, ForKind.THREAD_X) as tx:
        with b.allocate("s", "float16", (256,), Scope.SHARED) as s, \
                b.allocate("fa", "float16", (1,), Scope.WMMA_A) as fa, \
                b.allocate("fc", "float32", (1,), Scope.WMMA_ACC) as fc:
            with b.loop("k", 4) as k:
                b.evaluate(call("cp_async", Address(s, (tx * 8,)), Address(a, (k * 256 + tx * 8,)), IntImm(16),
                                dtype="handle"))
                b.evaluate(call("wmma_load", fa[0], Address(s, (IntImm(0),)), IntImm(16), dtype="handle"))
                b.evaluate(call("wmma_mma", fc[0], fa[0], fa[0], fc[0], dtype="handle"))
            b.evaluate(call("wmma_store", Address(g, (IntImm(0),)), fc[0], IntImm(16), dtype="handle"))
            b.evaluate(call("atomic_add", Address(g, (tx,)), call("shfl_xor", FloatImm(1.0), IntImm(16)),
                            dtype="handle"))
    vec = extract_features(lowered(b.get(), (a, g)), CUDA, cc.make_workload("reduce_sum", rows=1, cols=32))
    lanes, warps = 2 * 32, 2  # cp.async and atomics are per thread; wmma calls are per warp
    assert value(vec, "mem.global.lg_load_bytes") == pytest.approx(lg(lanes * (4 * 16 + 4)))
    assert value(vec, "mem.shared.lg_store_bytes") == pytest.approx(lg(lanes * 4 * 16))
    assert value(vec, "mem.shared.lg_load_bytes") == pytest.approx(lg(warps * 4 * 256 * 2))
    assert value(vec, "mem.global.lg_store_bytes") == pytest.approx(lg(warps * 256 * 4 + lanes * 4))
    assert value(vec, "ops.lg_mma") == pytest.approx(lg(warps * 4))
    assert value(vec, "ops.lg_flops") == pytest.approx(lg(warps * 4 * 8192 + lanes))
    assert value(vec, "ops.lg_shuffles") == pytest.approx(lg(lanes)) and value(vec, "ops.lg_atomics") > 0
    assert value(vec, "mem.global.coalesced_frac") > 0.9


def test_workload_descriptors():
    w = cc.make_workload("matmul", M=64, N=32, K=16, dtype="float16")
    vec = features(w, {}, CUDA, template="naive")
    flops, nbytes = 2 * 64 * 32 * 16, 2 * (64 * 16 + 16 * 32 + 64 * 32)
    assert value(vec, "wl.lg_flops") == pytest.approx(lg(flops))
    assert value(vec, "wl.lg_bytes") == pytest.approx(lg(nbytes))
    assert value(vec, "wl.lg_intensity") == pytest.approx(lg(flops / nbytes), rel=1e-6)
    assert value(vec, "wl.dtype_bytes") == 2 and value(vec, "ops.lg_casts") > 0
    assert value(vec, "wl.dtype.float16") == 1 and value(vec, "wl.dtype.bfloat16") == 0


def test_float16_and_bfloat16_differ_in_features():
    """Same size, different conversions: the dtype one-hot tells them apart for the cost model."""
    vecs = {dt: features(cc.make_workload("softmax", rows=8, cols=64, dtype=dt), {}, CPU, template="naive")
            for dt in ("float32", "float16", "bfloat16")}
    assert value(vecs["bfloat16"], "wl.dtype_bytes") == value(vecs["float16"], "wl.dtype_bytes") == 2
    assert value(vecs["float32"], "wl.dtype_bytes") == 4
    for dt, vec in vecs.items():
        assert [value(vec, f"wl.dtype.{t}") for t in ("float32", "float16", "bfloat16")].count(1.0) == 1
        assert value(vec, f"wl.dtype.{dt}") == 1
    assert value(vecs["bfloat16"], "ops.lg_casts") > 0 and value(vecs["float32"], "ops.lg_casts") == 0


def test_arithmetic_intensity_matches_its_parts():
    vec = features(cc.make_workload("matmul", M=32, N=32, K=32), {}, CPU, template="naive")
    flops = 2 ** value(vec, "ops.lg_flops") - 1
    gbytes = 2 ** value(vec, "mem.global.lg_load_bytes") + 2 ** value(vec, "mem.global.lg_store_bytes") - 2
    assert value(vec, "ops.lg_arith_intensity") == pytest.approx(math.log2(1 + flops / gbytes), rel=1e-4)


# ---- codegen version -------------------------------------------------------------------------
def test_codegen_version_is_stable_and_short_hex():
    v = codegen_version()
    assert re.fullmatch(r"[0-9a-f]{16}", v)
    assert codegen_version() == v == source_digest()


def test_source_digest_changes_with_any_source(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text("A = 1\n")
    (pkg / "sub" / "b.py").write_text("B = 2\n")
    base = source_digest(pkg)
    assert source_digest(pkg) == base and re.fullmatch(r"[0-9a-f]{16}", base)
    (pkg / "notes.txt").write_text("not source")
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "junk.py").write_text("X = 0\n")
    assert source_digest(pkg) == base
    digests = {base}
    (pkg / "sub" / "b.py").write_text("B = 3\n")
    digests.add(source_digest(pkg))
    (pkg / "c.py").write_text("")
    digests.add(source_digest(pkg))
    (pkg / "c.py").rename(pkg / "d.py")
    digests.add(source_digest(pkg))
    assert len(digests) == 4


def test_source_digest_does_not_confuse_names_and_contents(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    (one / "a.py").write_text("xy")
    (one / "b.py").write_text("")
    (two / "a.py").write_text("x")
    (two / "b.py").write_text("y")
    assert source_digest(one) != source_digest(two)


def test_vectors_from_different_targets_differ():
    a = features(ELEMENTWISE, {}, CUDA, template="naive")
    b = features(ELEMENTWISE, {}, CPU, template="naive")
    assert a.shape == b.shape and not np.array_equal(a, b)
