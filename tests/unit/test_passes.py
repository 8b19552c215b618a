"""The lowering passes, each on a small hand-built module."""
from __future__ import annotations

import pytest

from compiler_core.errors import ResourceError
from compiler_core.ir import (
    Allocate,
    Barrier,
    Buffer,
    FloatImm,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    IRBuilder,
    Load,
    Module,
    PrimFunc,
    Scope,
    Seq,
    Store,
    Var,
)
from compiler_core.ir.visitor import substitute, walk
from compiler_core.passes.flatten_buffers import flatten_buffers, linear_index
from compiler_core.passes.infer_launch import infer_launch
from compiler_core.passes.simplify import simplify
from compiler_core.passes.vectorize import affine_coefficient, vectorize
from compiler_core.passes.verify_resources import BASE_REGISTERS, register_estimate, verify_resources
from compiler_core.target import cpu_target, cuda_target

CUDA = cuda_target("sm_90")
CPU = cpu_target(isa="avx2", cores=2)  # pinned: unit tests do not depend on the host


def _module(body, params=()) -> Module:
    return Module("m", (PrimFunc("k", tuple(params), body),), tuple(params), (), 0)


def _body(module: Module):
    return module.kernels[0].body


def _eval(index, env: dict) -> int:
    folded = substitute(index, env)
    assert isinstance(folded, IntImm), folded
    return folded.value


def _nodes(stmt, cls) -> list:
    found = []
    walk(stmt, lambda n: found.append(n) if isinstance(n, cls) else None)
    return found


# ---- flatten_buffers ---------------------------------------------------------------------------
def test_flatten_uses_padded_strides():
    s = Buffer("s", "float32", (4, 8), Scope.SHARED, pad=1)
    g = Buffer("g", "float32", (4, 8))
    i, j = Var("i"), Var("j")
    store = Store(s, (i, j), Load(g, (i, j)))
    flat = _body(flatten_buffers(_module(store, (g,)), CUDA))
    assert len(flat.indices) == 1 and len(flat.value.indices) == 1
    for iv, jv in ((0, 0), (1, 0), (2, 3), (3, 7)):
        assert _eval(flat.indices[0], {i: iv, j: jv}) == iv * 9 + jv
        assert _eval(flat.value.indices[0], {i: iv, j: jv}) == iv * 8 + jv


def test_flatten_three_dimensional_and_one_dimensional():
    b = Buffer("b", "float32", (2, 3, 4), Scope.SHARED, pad=2)
    i, j, k = Var("i"), Var("j"), Var("k")
    (idx,) = linear_index(b, (i, j, k))
    assert _eval(idx, {i: 1, j: 2, k: 3}) == 1 * 18 + 2 * 6 + 3
    v = Buffer("v", "float32", (8,))
    assert linear_index(v, (k,)) == (k,)


def test_flatten_rejects_wrong_rank():
    b = Buffer("b", "float32", (2, 3))
    with pytest.raises(ValueError, match="rank 2"):
        linear_index(b, (Var("i"), Var("j"), Var("k")))


# ---- simplify ----------------------------------------------------------------------------------
def test_simplify_removes_extent_one_loops_and_substitutes_zero():
    out = Buffer("out", "float32", (16,))
    b = IRBuilder()
    with b.loop("i", 1) as i:
        with b.loop("j", 16) as j:
            b.store(out, i * 16 + j, 1.0)
    result = _body(simplify(_module(b.get(), (out,)), CPU))
    assert isinstance(result, For) and result.var.name == "j"
    assert result.body.indices[0] is result.var  # 0 * 16 + j folded to j


def test_simplify_drops_empty_loops_and_keeps_thread_bound_extent_one():
    out = Buffer("out", "float32", (16,))
    b = IRBuilder()
    with b.loop("z", 0):
        b.store(out, 0, 1.0)
    with b.loop("tx", 1, ForKind.THREAD_X) as tx:
        b.store(out, tx, 2.0)
    result = _body(simplify(_module(b.get(), (out,)), CUDA))
    assert isinstance(result, For) and result.kind is ForKind.THREAD_X


def test_simplify_resolves_constant_branches():
    out = Buffer("out", "float32", (4,))
    then, other = Store(out, (IntImm(0),), FloatImm(1.0)), Store(out, (IntImm(1),), FloatImm(2.0))
    assert _body(simplify(_module(IfThenElse(IntImm(1, "bool"), then, other)), CPU)) is then
    assert _body(simplify(_module(IfThenElse(IntImm(0, "bool"), then, other)), CPU)) is other
    empty = _body(simplify(_module(IfThenElse(IntImm(0, "bool"), then)), CPU))
    assert isinstance(empty, Seq) and empty.stmts == ()


def test_simplify_branch_made_constant_by_removing_a_loop():
    out = Buffer("out", "float32", (4,))
    b = IRBuilder()
    with b.loop("i", 1) as i:
        with b.if_(i < 1):
            b.store(out, i, 1.0)
    result = _body(simplify(_module(b.get(), (out,)), CPU))
    assert isinstance(result, Store) and result.indices[0].value == 0


def test_simplify_keeps_data_dependent_branches():
    out = Buffer("out", "float32", (4,))
    b = IRBuilder()
    with b.loop("i", 4) as i:
        with b.if_(i < 3):
            b.store(out, i, 1.0)
    result = _body(simplify(_module(b.get(), (out,)), CPU))
    assert isinstance(result, For) and isinstance(result.body, IfThenElse)


# ---- vectorize ---------------------------------------------------------------------------------
def _copy_module(stride: int, lanes: int = 4, dtype: str = "float32") -> Module:
    src = Buffer("src", dtype, (1024,))
    dst = Buffer("dst", dtype, (1024,), Scope.SHARED)
    b = IRBuilder()
    with b.loop("tx", 32, ForKind.THREAD_X) as tx:
        with b.loop("v", lanes, ForKind.VECTORIZED) as v:
            b.store(dst, tx * lanes * stride + v * stride, src[tx * lanes * stride + v * stride])
    return _module(b.get(), (src,))


def test_vectorize_turns_a_contiguous_copy_into_one_wide_move_on_cuda():
    body = _body(vectorize(_copy_module(stride=1), CUDA))
    assert isinstance(body, For) and body.kind is ForKind.THREAD_X
    move = body.body
    assert isinstance(move, Store) and move.lanes == 4
    assert isinstance(move.value, Load) and move.value.lanes == 4 and move.value.dtype == "float32x4"
    assert _eval(move.indices[0], {body.var: 3}) == 12 and _eval(move.value.indices[0], {body.var: 3}) == 12


def test_vectorize_unrolls_a_strided_copy():
    body = _body(vectorize(_copy_module(stride=2), CUDA))
    inner = body.body
    assert isinstance(inner, For) and inner.kind is ForKind.UNROLLED
    assert inner.body.lanes == 1


def test_vectorize_unrolls_widths_that_are_not_a_move():
    inner = _body(vectorize(_copy_module(stride=1, lanes=8), CUDA)).body  # 32 bytes
    assert isinstance(inner, For) and inner.kind is ForKind.UNROLLED
    half = _body(vectorize(_copy_module(stride=1, lanes=8, dtype="float16"), CUDA)).body  # 16 bytes
    assert isinstance(half, Store) and half.lanes == 8


def test_the_c_backend_leaves_vectorized_loops_to_the_host_compiler():
    from compiler_core.backends import backend

    assert vectorize not in backend("c").passes and vectorize in backend("cuda").passes


def test_affine_coefficient():
    i, j = Var("i"), Var("j")
    assert affine_coefficient(i * 4 + j, j) == 1
    assert affine_coefficient(i * 4 + j, i) == 4
    assert affine_coefficient(j - i * 3, i) == -3
    assert affine_coefficient(i * j, i) is None
    assert affine_coefficient((i * 4) % 8, i) is None
    assert affine_coefficient(j // 2, i) == 0


# ---- infer_launch ------------------------------------------------------------------------------
def test_infer_launch_takes_dims_from_bound_loops_and_sums_shared_bytes():
    out = Buffer("out", "float32", (4096,))
    b = IRBuilder()
    with b.loop("by", 3, ForKind.BLOCK_Y), b.loop("bx", 7, ForKind.BLOCK_X) as bx:
        with b.loop("ty", 4, ForKind.THREAD_Y), b.loop("tx", 32, ForKind.THREAD_X) as tx:
            with b.allocate("a", "float32", (8, 32), Scope.SHARED, pad=1) as a:
                with b.allocate("c", "float16", (64,), Scope.SHARED):
                    with b.allocate("r", "float32", (16,), Scope.LOCAL):
                        b.store(a, (0, tx), 1.0)
                        b.barrier()
                        b.store(out, bx * 32 + tx, a[0, tx])
        with b.loop("tx2", 64, ForKind.THREAD_X) as tx2:
            b.store(out, tx2, 0.0)
    f = infer_launch(_module(b.get(), (out,)), CUDA).kernels[0]
    assert f.grid == (7, 3, 1)
    assert f.block == (64, 4, 1)  # the widest loop bound to an axis sets its size
    assert f.shared_bytes == 8 * 33 * 4 + 64 * 2


def test_infer_launch_needs_constant_extents():
    n = Var("n")
    out = Buffer("out", "float32", (4,))
    loop = For(Var("tx"), n, ForKind.THREAD_X, Store(out, (IntImm(0),), FloatImm(0.0)))
    with pytest.raises(ValueError, match="constant extent"):
        infer_launch(_module(loop, (out,)), CUDA)


# ---- verify_resources --------------------------------------------------------------------------
def _launched(threads=(32, 1, 1), grid=(1, 1, 1), shared=0, local_words=0) -> Module:
    out = Buffer("out", "float32", (4,))
    body = Barrier()
    if local_words:
        body = Allocate(Buffer("r", "float32", (local_words,), Scope.LOCAL), body)
    return Module("m", (PrimFunc("k", (out,), body, grid, threads, shared),), (out,), (), 0)


def test_verify_resources_accepts_kernels_within_limits_and_records_registers():
    module = verify_resources(_launched(threads=(1024, 1, 1), shared=48 * 1024, local_words=40), CUDA)
    assert module.kernels[0].attrs["registers_estimate"] == BASE_REGISTERS + 40


@pytest.mark.parametrize("kwargs, message", [
    (dict(threads=(32, 33, 1)), "threads per block"),
    (dict(shared=48 * 1024 + 4), "shared memory"),
    (dict(local_words=255), "registers"),
    (dict(grid=(1, 70000, 1)), "grid"),
])
def test_verify_resources_rejects_kernels_over_limits(kwargs, message):
    with pytest.raises(ResourceError, match=message):
        verify_resources(_launched(**kwargs), CUDA)


def test_gpu_limits_are_checked_by_the_cuda_backend_only():
    from compiler_core.backends import backend

    assert verify_resources not in backend("c").passes and backend("cuda").passes[-1] is verify_resources


def test_register_estimate_counts_local_arrays_in_words():
    vec = Allocate(Buffer("v", "float32x8", (4,), Scope.LOCAL), Barrier())
    half = Allocate(Buffer("h", "float16", (7,), Scope.LOCAL), vec)
    shared = Allocate(Buffer("s", "float32", (1000,), Scope.SHARED), half)
    f = PrimFunc("k", (), shared)
    assert register_estimate(f) == BASE_REGISTERS + 32 + 4  # 4 x 8 floats, 7 halves round up to 4 words
