"""CUDA C codegen: `extern "C" __global__` kernels; vector copies as 32/64/128-bit moves; intrinsics. Kernels a
template rendered itself (OpaqueKernel) are emitted as given, after the prelude they need."""
from __future__ import annotations

from compiler_core.codegen.base import CodegenBase, written_buffers
from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.opaque import OpaqueKernel
from compiler_core.ir.visitor import walk

_AXIS = {"BLOCK_X": "blockIdx.x", "BLOCK_Y": "blockIdx.y", "BLOCK_Z": "blockIdx.z",
         "THREAD_X": "threadIdx.x", "THREAD_Y": "threadIdx.y", "THREAD_Z": "threadIdx.z"}
_BITS_TYPE = {2: "unsigned short", 4: "unsigned int", 8: "uint2", 16: "uint4"}
_WMMA = "nvcuda::wmma"
_DYN_SMEM = "tf_dyn_smem"  # the launch's dynamic shared memory; SHARED_DYN buffers are pointers into it
_DYN_ALIGN = 1024  # the most any buffer asks for (TMA's 128-byte swizzle pattern repeats every 1024 bytes)
_FRAGMENT = {  # {t}: the fragment's element type (the buffer's dtype)
    S.Scope.WMMA_A: f"{_WMMA}::fragment<{_WMMA}::matrix_a, 16, 16, 16, {{t}}, {_WMMA}::row_major>",
    S.Scope.WMMA_B: f"{_WMMA}::fragment<{_WMMA}::matrix_b, 16, 16, 16, {{t}}, {_WMMA}::row_major>",
    S.Scope.WMMA_B_COL: f"{_WMMA}::fragment<{_WMMA}::matrix_b, 16, 16, 16, {{t}}, {_WMMA}::col_major>",
    S.Scope.WMMA_ACC: f"{_WMMA}::fragment<{_WMMA}::accumulator, 16, 16, 16, {{t}}>",
}
# half <-> float32 conversions by (source, destination): round to nearest even when narrowing
_HALF_CASTS = {("float16", "float32"): "__half2float", ("float32", "float16"): "__float2half",
               ("bfloat16", "float32"): "__bfloat162float", ("float32", "bfloat16"): "__float2bfloat16"}


class CudaCodegen(CodegenBase):
    scalar_types = {**CodegenBase.scalar_types, "float16": "__half", "bfloat16": "__nv_bfloat16", "bool": "bool"}

    def vector_type(self, scalar: str, lanes: int) -> str:
        # Vector values only move data (loads/stores); they are typed by width, not by element.
        return _BITS_TYPE[lanes * S.dtype_bytes(scalar)]

    def half_literal(self, v: float, dtype: str) -> str:
        return f"{_HALF_CASTS[('float32', E.scalar_of(dtype))]}({v!r}f)"

    def expr_FloatImm(self, e: E.FloatImm) -> str:
        if e.value in (float("inf"), float("-inf")):
            return "CUDART_INF_F" if e.value > 0 else "(-CUDART_INF_F)"
        return super().expr_FloatImm(e)

    def expr_Cast(self, e: E.Cast) -> str:
        src, dst = E.scalar_of(e.value.dtype), e.dtype
        if (src, dst) in _HALF_CASTS:
            return f"{_HALF_CASTS[src, dst]}({self.expr(e.value)})"
        return super().expr_Cast(e)

    def math_call(self, name: str, args: list[str], dtype: str) -> str:
        if name == "rsqrt":
            return f"rsqrtf({args[0]})"
        return super().math_call(name, args, dtype)

    # ---- intrinsics ------------------------------------------------------------------
    def intrin_shfl_xor(self, value, mask):
        return f"__shfl_xor_sync(0xffffffffu, {self.expr(value)}, {self.expr(mask)})"

    def intrin_shfl_down(self, value, delta):
        return f"__shfl_down_sync(0xffffffffu, {self.expr(value)}, {self.expr(delta)})"

    def intrin_shfl_idx(self, value, lane):
        return f"__shfl_sync(0xffffffffu, {self.expr(value)}, {self.expr(lane)})"

    def intrin_cp_async(self, dst, src, nbytes):
        return f"__pipeline_memcpy_async({self.expr(dst)}, {self.expr(src)}, {self.expr(nbytes)})"

    def intrin_cp_async_commit(self):
        return "__pipeline_commit()"

    def intrin_cp_async_wait(self, n):
        return f"__pipeline_wait_prior({self.expr(n)})"

    def intrin_atomic_add(self, addr, value):
        return f"atomicAdd({self.expr(addr)}, {self.expr(value)})"

    def intrin_wmma_fill(self, frag, value):
        return f"{_WMMA}::fill_fragment({self.expr(frag)}, {self.expr(value)})"

    def intrin_wmma_load(self, frag, addr, ldm):
        return f"{_WMMA}::load_matrix_sync({self.expr(frag)}, {self.expr(addr)}, {self.expr(ldm)})"

    def intrin_wmma_mma(self, d, a, b, c):
        return f"{_WMMA}::mma_sync({self.expr(d)}, {self.expr(a)}, {self.expr(b)}, {self.expr(c)})"

    def intrin_wmma_store(self, addr, frag, ldm):
        return (f"{_WMMA}::store_matrix_sync({self.expr(addr)}, {self.expr(frag)}, {self.expr(ldm)}, "
                f"{_WMMA}::mem_row_major)")

    # ---- statements ------------------------------------------------------------------
    def loop_pragma(self, s: S.For) -> None:
        if s.kind in (S.ForKind.UNROLLED, S.ForKind.VECTORIZED):
            self.line("#pragma unroll")

    def thread_binding(self, s: S.For) -> None:
        axis = _AXIS[s.kind.name]
        launched = self._launched(s.kind)
        self.line(f"const int {s.var.name} = {axis};")
        if isinstance(s.extent, E.IntImm) and s.extent.value == launched:
            self.stmt(s.body)
            return
        self.line(f"if ({s.var.name} < {self.expr(s.extent)}) {{")
        self.body(s.body)
        self.line("}")

    def _launched(self, kind: S.ForKind) -> int:
        dims = self.func.grid if kind.name.startswith("BLOCK") else self.func.block
        return dims["XYZ".index(kind.name[-1])]

    def stmt_Barrier(self, s: S.Barrier) -> None:
        self.line("__syncthreads();")

    def stmt_Allocate(self, s: S.Allocate) -> None:
        buf = s.buffer
        self.line("{")
        self.indent += 1
        if buf.scope in _FRAGMENT:
            self.line(f"{_FRAGMENT[buf.scope].format(t=self.type_of(buf.dtype))} {buf.name}[{buf.physical_elems}];")
        elif buf.scope is S.Scope.SHARED_DYN:
            ctype = self.type_of(buf.dtype)
            self.line(f"{ctype}* __restrict__ {buf.name} = reinterpret_cast<{ctype}*>({_DYN_SMEM} + "
                      f"{self.func.dynamic_offsets[buf.name]});")
        elif buf.scope is S.Scope.SHARED:
            self.line(f"__shared__ __align__({buf.align}) {self.type_of(buf.dtype)} {buf.name}[{buf.physical_elems}];")
        else:
            # aligned so 128-bit moves into register arrays stay legal even if an array lands in local memory
            self.line(f"{self.type_of(buf.dtype)} __align__(16) {buf.name}[{buf.physical_elems}];")
        self.stmt(s.body)
        self.indent -= 1
        self.line("}")

    def render(self, module: S.Module) -> str:
        funcs = [k for k in module.kernels if isinstance(k, S.PrimFunc)]
        opaque = [k for k in module.kernels if isinstance(k, OpaqueKernel)]
        parts = [self.render_funcs(funcs)] if funcs or not opaque else []
        if opaque:
            parts.append(render_opaque(opaque))
        return "\n".join(parts)

    def render_funcs(self, funcs: list) -> str:
        self.lines = []
        uses = self._intrinsics(funcs)
        head = ["#include <cuda_fp16.h>", "#include <math_constants.h>"]
        if self._uses_bfloat16(funcs):
            head.insert(1, "#include <cuda_bf16.h>")
        if any(name.startswith("wmma") for name in uses):
            head.append("#include <mma.h>")
        if any(name.startswith("cp_async") for name in uses):
            head.append("#include <cuda_pipeline.h>")
        for func in funcs:
            self.func = func
            written = written_buffers(func.body)
            params = ", ".join(self.param_decl(b, b in written) for b in func.params)
            threads = func.block[0] * func.block[1] * func.block[2]
            self.line(f'extern "C" __global__ void __launch_bounds__({threads}) {func.name}({params}) {{')
            if func.dynamic_shared_bytes:
                self.line(f"  extern __shared__ __align__({_DYN_ALIGN}) unsigned char {_DYN_SMEM}[];")
            self.body(func.body)
            self.line("}")
        return "\n".join(head) + "\n\n" + "\n".join(self.lines) + "\n"

    @staticmethod
    def _uses_bfloat16(funcs: list) -> bool:
        return any(E.scalar_of(b.dtype) == "bfloat16" for f in funcs for b in f.params
                   if isinstance(b, S.Buffer)) or any(
            E.scalar_of(getattr(n, "buffer", n).dtype) == "bfloat16" for f in funcs for n in _allocations(f.body))

    @staticmethod
    def _intrinsics(funcs: list) -> set:
        names: set = set()
        for func in funcs:
            walk(func.body, lambda n: names.add(n.name) if isinstance(n, E.Call) else None)
        return names


def render_opaque(kernels: list) -> str:
    """Kernels their templates rendered: the prelude blocks of all of them, each once, in order of first use; then
    each kernel inside a namespace of its own, so that two kernels' constants and helpers (BM, struct Ring, ...)
    never collide in one translation unit (extern "C" keeps the entry's unmangled name)."""
    blocks = dict.fromkeys(block for k in kernels for block in k.prelude)
    text = ["\n".join(blocks)]
    for k in kernels:
        text.append(f"namespace {k.name}_impl {{\n{k.source}}}  // namespace {k.name}_impl\n")
    return "\n".join(text)


def _allocations(body: S.Stmt) -> list:
    found: list = []
    walk(body, lambda n: found.append(n) if isinstance(n, S.Allocate) else None)
    return found
