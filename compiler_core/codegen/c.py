"""C codegen: a shared library exporting `tf_entry`, OpenMP for parallel loops, GCC vector types."""
from __future__ import annotations

from compiler_core.codegen import c_amx, c_half
from compiler_core.codegen.base import CodegenBase, written_buffers
from compiler_core.codegen.c_facts import module_facts
from compiler_core.codegen.c_libm import LIBM, libm_helpers
from compiler_core.codegen.c_vector_math import VECTOR_MATH, vector_math_helpers, vector_minmax
from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S

HEAP_THRESHOLD_BYTES = 32 * 1024  # larger local buffers (packed panels) go on the heap, not the stack
# Heap buffers past glibc's largest mmap threshold (32 MiB) are mapped afresh on every call: a 4 KiB page fault
# each cost a 1 x 4096 x 4096 float32 matmul with B packed 20 of its 22 ms
# (benchmarks/results/2026-11-30-cpu-gemm-few-rows/). They are 2 MiB-aligned and marked for transparent huge
# pages, which fault once per 2 MiB. Smaller buffers come back from glibc's heap warm after the first call; huge
# pages there moved nothing beyond the noise (0.94-1.17x).
HUGE_PAGE_BYTES = 2 << 20
HUGE_PAGE_MIN_BYTES = 32 << 20  # buffers from this size on get them

PRELUDE = """#include <math.h>
#include <stdlib.h>
#include <string.h>
"""


class CCodegen(CodegenBase):
    scalar_types = {**CodegenBase.scalar_types, "float16": "_Float16", "bfloat16": c_half.BF16_CTYPE}

    def __init__(self, threads: int = 1, half_conversion: str = "cast", f16c_lanes: tuple = (),
                 int16_lanes: tuple = ()) -> None:
        super().__init__()
        self.threads = threads
        # "bits" (Target.half_conversion): scalar float16 loads and stores convert on the bits (c_half.F16_HELPERS),
        # not by libgcc calls; float16 vectors of f16c_lanes convert by intrinsics (c_half.f16c_lanes)
        self.f16_bits = half_conversion == "bits"
        self.f16c_lanes = f16c_lanes
        # vectors of 16-bit lanes of these widths widen and narrow by x86 intrinsics (c_half.int16_intrinsic_lanes):
        # bfloat16's, and float16's on the bits
        self.int16_lanes = int16_lanes

    def vector_type(self, scalar: str, lanes: int) -> str:
        return f"tf_{scalar}x{lanes}"

    def half_literal(self, v: float, dtype: str) -> str:
        if E.scalar_of(dtype) == "bfloat16":
            return f"tf_f32_to_bf16({v!r}f)"
        return f"((_Float16){v!r}f)"

    def expr_Cast(self, e: E.Cast) -> str:
        loaded = self._f16_load(e)
        if loaded is not None:
            return loaded
        src, dst = E.scalar_of(e.value.dtype), E.scalar_of(e.dtype)
        converted = c_half.cast(src, dst, E.lanes_of(e.dtype), self.expr(e.value), self.type_of(e.dtype),
                                f16c=self.f16c_lanes, f16_bits=self.f16_bits)
        return converted if converted is not None else super().expr_Cast(e)

    def _f16_load(self, e: E.Cast) -> str | None:
        """A scalar float16 load widened to float32, on the bits (c_half.F16_HELPERS); None for any other cast."""
        v = e.value
        if (self.f16_bits and E.lanes_of(e.dtype) == 1 and E.scalar_of(e.dtype) == "float32"
                and isinstance(v, E.Load) and v.lanes == 1 and E.scalar_of(v.dtype) == "float16"):
            return self.intrin_f16_load(E.Address(v.buffer, v.indices))
        return None

    def stmt_Store(self, s: S.Store) -> None:
        v = s.value
        if (self.f16_bits and s.lanes == 1 and isinstance(v, E.Cast) and E.scalar_of(v.dtype) == "float16"
                and E.lanes_of(v.dtype) == 1 and E.scalar_of(v.value.dtype) == "float32"):
            self.line(self.intrin_f16_store(E.Address(s.buffer, s.indices), v.value) + ";")
            return
        super().stmt_Store(s)

    def intrin_f16_load(self, address: E.Address) -> str:
        return f"tf_f16_load(&{address.buffer.name}[{self.index(address.indices)}])"

    def intrin_f16_store(self, address: E.Address, value: E.Expr) -> str:
        return f"tf_f16_store(&{address.buffer.name}[{self.index(address.indices)}], {self.expr(value)})"

    def intrin_bf16_dot(self, acc: E.Expr, pair: E.Expr, pairs: E.Expr) -> str:
        return f"tf_bf16_dot16({self.expr(acc)}, {self.expr(pair)}, {self.expr(pairs)})"

    def intrin_amx_setup(self) -> str:
        return "tf_amx_setup()"

    def intrin_amx_release(self) -> str:
        return "_tile_release()"

    def intrin_amx_tile(self, c, c_stride, accumulate, a, a_stride, b, b_stride, steps, row_tiles, col_tiles,
                        *rows) -> str:
        """(rows: B's pair rows gathered, c_amx.tile_helper's `gathered`)"""
        args = ", ".join(self.expr(x) for x in (c, c_stride, accumulate, a, a_stride, b, b_stride, steps, *rows))
        return f"tf_amx_{'rows' if rows else 'tile'}_{row_tiles.value}x{col_tiles.value}({args})"

    def expr_Broadcast(self, e: E.Broadcast) -> str:
        # x - 0 is x for every x (-0.0 included), so GCC folds the subtraction and a load's broadcast stays one
        # vbroadcastss; the earlier 0 + x could not fold (-0.0 + 0.0 is +0.0) and cost an add per broadcast,
        # in the GEMM microkernel one per row of A per reduction step
        return f"(({self.expr(e.value)}) - ({self.type_of(e.dtype)}){{0}})"

    def math_call(self, name: str, args: list[str], dtype: str) -> str:
        if E.lanes_of(dtype) > 1:
            if name in VECTOR_MATH and E.scalar_of(dtype) == "float32":
                return f"tf_{name}_{dtype}({', '.join(args)})"
            raise NotImplementedError(f"vector math call {name} has no C rendering")
        if E.scalar_of(dtype) == "float32":  # inline, so a loop of calls vectorizes (c_libm)
            if name in LIBM:
                return f"tf_{name}f({', '.join(args)})"
            if name == "sigmoid":
                return f"(1.0f / (1.0f + tf_expf(-({args[0]}))))"
        return super().math_call(name, args, dtype)

    def minmax(self, op: str, a: E.Expr, b: E.Expr, dtype: str) -> str:
        if E.lanes_of(dtype) > 1:
            return vector_minmax(op, self.expr(a), self.expr(b), self.type_of(dtype), E.lanes_of(dtype))
        return super().minmax(op, a, b, dtype)

    def loop_pragma(self, s: S.For) -> None:
        if s.kind is S.ForKind.PARALLEL:
            self.line(f"#pragma omp parallel for schedule(static) num_threads({self.threads})")
        elif s.kind is S.ForKind.VECTORIZED:
            self.line("#pragma omp simd")
        elif s.kind is S.ForKind.UNROLLED and isinstance(s.extent, E.IntImm):
            self.line(f"#pragma GCC unroll {min(s.extent.value, 64)}")

    def stmt_Barrier(self, s: S.Barrier) -> None:
        pass

    def stmt_Allocate(self, s: S.Allocate) -> None:
        buf = s.buffer
        ctype = self.type_of(buf.dtype)
        self.line("{")
        self.indent += 1
        if buf.nbytes > HEAP_THRESHOLD_BYTES:
            align = HUGE_PAGE_BYTES if buf.nbytes >= HUGE_PAGE_MIN_BYTES else 64
            size = -(-buf.nbytes // align) * align
            self.line(f"{ctype}* __restrict__ {buf.name} = ({ctype}*)aligned_alloc({align}, {size});")
            self.line(f"if (!{buf.name}) abort();  /* out of memory: the worker reports a runtime error */")
            if align == HUGE_PAGE_BYTES:
                self.uses_madvise = True
                self.line(f"madvise({buf.name}, {size}, MADV_HUGEPAGE);  /* a hint: THP off or short, small pages */")
            self.stmt(s.body)
            self.line(f"free({buf.name});")
        else:
            self.line(f"{ctype} {buf.name}[{buf.physical_elems}] __attribute__((aligned(64)));")
            self.stmt(s.body)
        self.indent -= 1
        self.line("}")

    def render(self, module: S.Module) -> str:
        self.lines = []
        self.uses_madvise = False
        facts = module_facts(module, self.f16c_lanes, self.f16_bits)
        for scalar, lanes in sorted(facts.vector_types):
            ctype = self.scalar_types[scalar]
            nbytes = lanes * S.DTYPE_BYTES[scalar]
            align = min(4, S.DTYPE_BYTES[scalar])  # half vectors load from any element: 2-byte aligned
            self.line(f"typedef {ctype} tf_{scalar}x{lanes} __attribute__((vector_size({nbytes}), aligned({align})));")
        self.lines.extend(c_half.helpers(facts.bf16_lanes, self.vector_type, self.int16_lanes))
        self.lines.extend(c_half.f16_helpers(facts.half_bits, self.vector_type, self.int16_lanes))
        intrinsics = facts.f16c or bool((facts.bf16_lanes | facts.half_bits) & set(self.int16_lanes))
        if "bf16_dot" in facts.calls:
            self.lines.append(c_half.bf16_dot_helper(self.vector_type))
            intrinsics = True
        if facts.amx_tiles or "amx_setup" in facts.calls:
            self.lines.append(c_amx.SETUP)
            self.lines.extend(c_amx.tile_helper(*shape) for shape in sorted(facts.amx_tiles))
            intrinsics = True
        self.lines.extend(libm_helpers(facts.scalar_math | {name for name, _, _ in facts.vector_math}))
        self.lines.extend(vector_math_helpers(facts.vector_math, self.vector_type))
        for func in module.kernels:
            self.func = func
            written = written_buffers(func.body)
            params = ", ".join(self.param_decl(b, b in written) for b in func.params)
            self.line(f"static void {func.name}({params}) {{")
            self.body(func.body)
            self.line("}")
        self._entry(module)
        includes = ("#include <immintrin.h>\n" if intrinsics else "") + \
            ("#include <sys/mman.h>\n" if self.uses_madvise else "")
        return PRELUDE + includes + "\n".join(self.lines) + "\n"

    def _entry(self, module: S.Module) -> None:
        params = ", ".join(f"{self.type_of(b.dtype)}* {b.name}" for b in module.args)
        self.line(f"int tf_entry({params}) {{")
        self.indent += 1
        for w in module.workspaces:
            ctype = self.type_of(w.dtype)
            self.line(f"{ctype}* {w.name} = ({ctype}*)calloc({w.physical_elems}, sizeof({ctype}));")
            self.line(f"if (!{w.name}) return 1;")
        for func in module.kernels:
            self.line(f"{func.name}({', '.join(b.name for b in func.params)});")
        for w in module.workspaces:
            self.line(f"free({w.name});")
        self.line("return 0;")
        self.indent -= 1
        self.line("}")

