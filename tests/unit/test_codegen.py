"""C and CUDA rendering of small hand-built modules (text only: no compiler runs here)."""
from __future__ import annotations

import re

from compiler_core.codegen import generate_source
from compiler_core.codegen.c import HEAP_THRESHOLD_BYTES, HUGE_PAGE_BYTES, HUGE_PAGE_MIN_BYTES
from compiler_core.codegen.c_facts import module_facts
from compiler_core.ir import (
    Address,
    Buffer,
    FloatImm,
    ForKind,
    IntImm,
    IRBuilder,
    Module,
    PrimFunc,
    Scope,
    call,
    cast,
)
from compiler_core.lower import run_passes
from compiler_core.target import cpu_target, cuda_target

CUDA = cuda_target("sm_90")
CPU = cpu_target(isa="avx2", cores=3)  # pinned: unit tests do not depend on the host


def _render(body, params, target, num_inputs=1, workspaces=()) -> str:
    module = Module("m", (PrimFunc("k", tuple(params) + tuple(workspaces), body),), tuple(params),
                    tuple(workspaces), num_inputs)
    module = run_passes(module, target)
    return generate_source(module, target)


def _squash(src: str) -> str:
    return re.sub(r"\s+", " ", src)


# ---- CUDA ------------------------------------------------------------------------------------
def _two_thread_loops(first: int, second: int) -> str:
    g, o = Buffer("g", "float32", (1024,)), Buffer("o", "float32", (1024,))
    b = IRBuilder()
    with b.loop("bx", 4, ForKind.BLOCK_X) as bx:
        with b.loop("tx", first, ForKind.THREAD_X) as tx:
            b.store(o, bx * first + tx, g[tx])
        with b.loop("ty", second, ForKind.THREAD_X) as ty:
            b.store(o, ty, FloatImm(0.0))
    return _render(b.get(), (g, o), CUDA)


def test_cuda_kernel_signature_launch_bounds_and_constness():
    src = _two_thread_loops(128, 128)
    assert 'extern "C" __global__ void __launch_bounds__(128) k(' in src
    assert "const float* __restrict__ g" in src and "float* __restrict__ o" in src
    assert "const float* __restrict__ o" not in src
    assert "const int bx = blockIdx.x;" in src and "const int tx = threadIdx.x;" in src


def test_cuda_thread_loop_smaller_than_the_block_is_guarded():
    src = _two_thread_loops(128, 100)
    assert "if (ty < 100) {" in src
    assert "if (tx <" not in src  # the loop that sets the block size needs no guard
    assert "__launch_bounds__(128)" in src


def test_cuda_vector_copy_renders_as_a_wide_move_and_barrier():
    g, o = Buffer("g", "float32", (512,)), Buffer("o", "float32", (512,))
    b = IRBuilder()
    with b.loop("tx", 128, ForKind.THREAD_X) as tx:
        with b.allocate("s", "float32", (512,), Scope.SHARED) as s:
            with b.loop("v", 4, ForKind.VECTORIZED) as v:
                b.store(s, tx * 4 + v, g[tx * 4 + v])
            b.barrier()
            with b.loop("w", 2, ForKind.VECTORIZED) as w:
                b.store(o, tx * 2 + w, s[tx * 2 + w])
    src = _render(b.get(), (g, o), CUDA)
    assert "__shared__ __align__(16) float s[512];" in src
    assert "(*(uint4*)(&s[(tx * 4)])) = (*(uint4*)(&g[(tx * 4)]));" in src
    assert "(*(uint2*)(&o[(tx * 2)])) = (*(uint2*)(&s[(tx * 2)]));" in src
    assert "__syncthreads();" in src
    assert "for (int v" not in src and "for (int w" not in src


def test_cuda_half_vector_and_conversions():
    g, h = Buffer("g", "float16", (256,)), Buffer("h", "float16", (256,))
    f = Buffer("f", "float32", (256,))
    b = IRBuilder()
    with b.loop("tx", 64, ForKind.THREAD_X) as tx:
        with b.loop("v", 2, ForKind.VECTORIZED) as v:
            b.store(h, tx * 2 + v, g[tx * 2 + v])
        b.store(f, tx, cast("float32", g[tx]))
        b.store(h, tx, cast("float16", f[tx]))
    src = _render(b.get(), (g, h, f), CUDA)
    assert "(*(unsigned int*)(&h[(tx * 2)])) = (*(unsigned int*)(&g[(tx * 2)]));" in src
    assert "__half2float(g[tx])" in src and "__float2half(f[tx])" in src
    assert "__half* __restrict__ h" in src


def test_cuda_intrinsics_and_headers():
    g, o = Buffer("g", "float32", (256,)), Buffer("o", "float32", (256,))
    b = IRBuilder()
    with b.loop("tx", 32, ForKind.THREAD_X) as tx:
        with b.allocate("s", "float32", (32,), Scope.SHARED) as s:
            b.evaluate(call("cp_async", Address(s, (tx,)), Address(g, (tx,)), IntImm(4), dtype="handle"))
            b.evaluate(call("cp_async_commit", dtype="handle"))
            b.evaluate(call("cp_async_wait", IntImm(0), dtype="handle"))
            value = call("shfl_xor", s[tx], IntImm(16)) + call("rsqrt", s[tx]) + FloatImm(float("-inf"))
            b.store(o, tx, value)
            b.evaluate(call("atomic_add", Address(o, (IntImm(0),)), s[tx], dtype="handle"))
    src = _render(b.get(), (g, o), CUDA)
    assert "#include <cuda_pipeline.h>" in src and "#include <mma.h>" not in src
    assert "__pipeline_memcpy_async((&s[tx]), (&g[tx]), 4);" in src
    assert "__pipeline_commit();" in src and "__pipeline_wait_prior(0);" in src
    assert "__shfl_xor_sync(0xffffffffu, s[tx], 16)" in src
    assert "rsqrtf(s[tx])" in src and "(-CUDART_INF_F)" in src
    assert "atomicAdd((&o[0]), s[tx]);" in src


def test_cuda_wmma_fragments_include_mma_header():
    a = Buffer("a", "float16", (256,), Scope.SHARED)
    out = Buffer("out", "float32", (256,))
    b = IRBuilder()
    with b.loop("tx", 32, ForKind.THREAD_X):
        with b.allocate("fa", "float16", (1,), Scope.WMMA_A) as fa, b.allocate("fc", "float32", (1,),
                                                                             Scope.WMMA_ACC) as fc:
            b.evaluate(call("wmma_fill", fc[0], FloatImm(0.0), dtype="handle"))
            b.evaluate(call("wmma_load", fa[0], Address(a, (IntImm(0),)), IntImm(16), dtype="handle"))
            b.evaluate(call("wmma_mma", fc[0], fa[0], fa[0], fc[0], dtype="handle"))
            b.evaluate(call("wmma_store", Address(out, (IntImm(0),)), fc[0], IntImm(16), dtype="handle"))
    src = _render(b.get(), (a, out), CUDA)
    assert "#include <mma.h>" in src
    assert "nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __half, nvcuda::wmma::row_major> fa[1];" in src
    assert "nvcuda::wmma::mma_sync(fc[0], fa[0], fa[0], fc[0]);" in src
    assert "nvcuda::wmma::store_matrix_sync((&out[0]), fc[0], 16, nvcuda::wmma::mem_row_major);" in src


# ---- C ---------------------------------------------------------------------------------------
def test_c_pragmas_for_parallel_simd_and_unrolled_loops():
    g, o = Buffer("g", "float32", (64, 64)), Buffer("o", "float32", (64, 64))
    b = IRBuilder()
    with b.loop("i", 64, ForKind.PARALLEL) as i:
        with b.loop("jo", 8, ForKind.UNROLLED) as jo:
            with b.loop("ji", 8, ForKind.VECTORIZED) as ji:
                b.store(o, (i, jo * 8 + ji), g[i, jo * 8 + ji] * FloatImm(2.0))
    src = _render(b.get(), (g, o), CPU)
    lines = [line.strip() for line in src.splitlines()]
    par = lines.index("#pragma omp parallel for schedule(static) num_threads(3)")
    assert lines[par + 1] == "for (int i = 0; i < 64; ++i) {"
    unroll = lines.index("#pragma GCC unroll 8")
    assert lines[unroll + 1] == "for (int jo = 0; jo < 8; ++jo) {"
    simd = lines.index("#pragma omp simd")
    assert lines[simd + 1] == "for (int ji = 0; ji < 8; ++ji) {"
    assert "o[((i * 64) + ((jo * 8) + ji))] = (g[((i * 64) + ((jo * 8) + ji))] * 2.0f);" in _squash(src)


def test_c_small_local_buffers_on_the_stack_big_ones_on_the_heap():
    o = Buffer("o", "float32", (16,))
    big_elems = HEAP_THRESHOLD_BYTES // 4 + 1
    b = IRBuilder()
    with b.allocate("small", "float32", (16,), Scope.LOCAL) as small:
        with b.allocate("panel", "float32", (big_elems,), Scope.LOCAL) as panel:
            b.store(panel, 0, 1.0)
            b.store(small, 0, panel[0])
            b.store(o, 0, small[0])
    src = _render(b.get(), (o,), CPU, num_inputs=0)
    assert "float small[16] __attribute__((aligned(64)));" in src
    size = -(-big_elems * 4 // 64) * 64
    assert f"float* __restrict__ panel = (float*)aligned_alloc(64, {size});" in src
    assert src.index("aligned_alloc") < src.index("free(panel);")
    assert "panel[" + str(big_elems) not in src
    assert "madvise" not in src and "sys/mman.h" not in src


def test_c_buffers_of_huge_pages_are_aligned_to_them_and_marked_for_them():
    o = Buffer("o", "float32", (1,))
    elems = HUGE_PAGE_MIN_BYTES // 4 + 3  # 12 bytes past the threshold: rounded up to the next huge page
    b = IRBuilder()
    with b.allocate("packed", "float32", (elems,), Scope.LOCAL) as packed:
        with b.allocate("below", "float32", (HUGE_PAGE_MIN_BYTES // 4 - 16,), Scope.LOCAL) as below:
            b.store(packed, elems - 1, 1.0)
            b.store(below, 0, packed[elems - 1])
            b.store(o, 0, below[0])
    src = _render(b.get(), (o,), CPU, num_inputs=0)
    size = HUGE_PAGE_MIN_BYTES + HUGE_PAGE_BYTES
    assert f"float* __restrict__ below = (float*)aligned_alloc(64, {HUGE_PAGE_MIN_BYTES - 64});" in src
    assert f"float* __restrict__ packed = (float*)aligned_alloc({HUGE_PAGE_BYTES}, {size});" in src
    assert f"madvise(packed, {size}, MADV_HUGEPAGE);" in src and "#include <sys/mman.h>" in src
    assert src.index("madvise") < src.index("free(packed);")


def test_c_entry_allocates_and_frees_workspaces_and_calls_kernels():
    x, y = Buffer("in_x", "float32", (8,)), Buffer("out_y", "float32", (8,))
    ws = Buffer("ws_t", "float32", (8,))
    b = IRBuilder()
    with b.loop("i", 8) as i:
        b.store(ws, i, x[i])
        b.store(y, i, ws[i])
    src = _render(b.get(), (x, y), CPU, workspaces=(ws,))
    assert "static void k(const float* __restrict__ in_x, float* __restrict__ out_y, float* __restrict__ ws_t)" \
        in src
    assert "int tf_entry(float* in_x, float* out_y) {" in src
    assert "float* ws_t = (float*)calloc(8, sizeof(float));" in src
    assert "if (!ws_t) return 1;" in src
    assert src.index("k(in_x, out_y, ws_t);") < src.index("free(ws_t);") < src.index("return 0;")


def test_c_math_and_vector_typedefs():
    x, y = Buffer("x", "float32", (8,)), Buffer("y", "float32", (8,))
    b = IRBuilder()
    with b.allocate("r", "float32x8", (2,), Scope.LOCAL) as r:
        with b.loop("i", 8) as i:
            b.store(y, i, call("rsqrt", x[i]) + call("sigmoid", x[i]) + call("erf", x[i]))
        b.store(r, 0, r[1])
    src = _render(b.get(), (x, y), CPU)
    assert "typedef float tf_float32x8 __attribute__((vector_size(32), aligned(4)));" in src
    assert "tf_float32x8 r[2]" in src
    # exp and erf are the inline (vectorizable) ones of c_libm, defined once before the kernel; sqrt is libm's
    assert "(1.0f / sqrtf(x[i]))" in src and "(1.0f / (1.0f + tf_expf(-(x[i]))))" in src and "tf_erff(x[i])" in src
    assert src.count("static inline float tf_expf(") == 1 and src.count("static inline float tf_erff(") == 1
    assert not re.search(r"[^_]\b(expf|erff)\(", src)


def test_c_module_facts_are_gathered_in_one_walk():
    """What the C source declares before its kernels comes from one walk of the module (c_facts.module_facts):
    vector types, bfloat16 and float16 conversion lanes (F16C for its lanes, on the bits otherwise), intrinsic calls,
    and the math helpers (a scalar sigmoid needs exp)."""
    x, y = Buffer("x", "float32", (16,)), Buffer("h", "float16", (16,))
    z = Buffer("z", "bfloat16", (16,))
    b = IRBuilder()
    with b.allocate("v", "float32x8", (1,), Scope.LOCAL) as v:
        with b.loop("i", 8) as i:
            b.store(x, i, call("sigmoid", x[i]) + cast("float32", y[i]) + cast("float32", z[i]))
        b.store(v, 0, call("exp", v[0], dtype="float32x8"))
        b.store(y, 0, cast("float16x8", v[0]))
        b.store(y, 1, cast("float16x4", call("tanh", v[0], dtype="float32x8")))
    body = b.get()
    module = Module("m", (PrimFunc("k", (x, y, z), body),), (x, y, z), (), 1)
    facts = module_facts(module, f16c_lanes=(8,), f16_bits=True)
    assert ("float32", 8) in facts.vector_types and ("float16", 8) in facts.vector_types
    assert facts.bf16_lanes == {1} and facts.f16c and facts.half_bits == {1, 4}
    assert facts.calls == {"sigmoid", "exp", "tanh"}
    assert facts.vector_math == {("exp", "float32", 8), ("tanh", "float32", 8)} and facts.scalar_math == {"exp"}
    plain = module_facts(module)  # without F16C lanes or bits: float16 converts by the compiler's casts
    assert not plain.f16c and plain.half_bits == set()


def test_c_ignores_barriers_and_renders_conditions():
    x = Buffer("x", "float32", (8,))
    b = IRBuilder()
    with b.loop("i", 8) as i:
        with b.if_else(i < 4) as otherwise:
            b.store(x, i, 1.0)
            otherwise()
            b.store(x, i, FloatImm(float("inf")))
        b.barrier()
    src = _render(b.get(), (x,), CPU, num_inputs=0)
    assert "__syncthreads" not in src
    assert "if ((i < 4)) {" in src and "} else {" in src and "x[i] = INFINITY;" in src
