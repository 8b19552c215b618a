"""C codegen: a shared library exporting `tf_entry`, OpenMP for parallel loops, GCC vector types."""
from __future__ import annotations

from compiler_core.codegen import c_amx, c_half
from compiler_core.codegen.base import CodegenBase, written_buffers
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
        vector_decls = sorted(self._vector_types(module))
        for scalar, lanes in vector_decls:
            ctype = self.scalar_types[scalar]
            nbytes = lanes * S.DTYPE_BYTES[scalar]
            align = min(4, S.DTYPE_BYTES[scalar])  # half vectors load from any element: 2-byte aligned
            self.line(f"typedef {ctype} tf_{scalar}x{lanes} __attribute__((vector_size({nbytes}), aligned({align})));")
        bf16_lanes = self._bf16_lanes(module)
        self.lines.extend(c_half.helpers(bf16_lanes, self.vector_type, self.int16_lanes))
        bits_lanes, uses_f16c = self._half_conversions(module)
        self.lines.extend(c_half.f16_helpers(bits_lanes, self.vector_type, self.int16_lanes))
        intrinsics = uses_f16c or bool((bf16_lanes | bits_lanes) & set(self.int16_lanes))
        if self._calls(module, "bf16_dot"):
            self.lines.append(c_half.bf16_dot_helper(self.vector_type))
            intrinsics = True
        amx_tiles = self._amx_tiles(module)
        if amx_tiles or self._calls(module, "amx_setup"):
            self.lines.append(c_amx.SETUP)
            self.lines.extend(c_amx.tile_helper(*shape) for shape in sorted(amx_tiles))
            intrinsics = True
        vector_calls, scalar_calls = self._math_calls(module)
        self.lines.extend(libm_helpers(scalar_calls | {name for name, _, _ in vector_calls}))
        self.lines.extend(vector_math_helpers(vector_calls, self.vector_type))
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

    @staticmethod
    def _vector_types(module: S.Module) -> set:
        from compiler_core.ir.visitor import walk

        found: set = set()

        def visit(node):
            if isinstance(node, S.Allocate):
                dtype = node.buffer.dtype
            else:
                dtype = getattr(node, "dtype", None) if isinstance(node, E.Expr) else None
            if isinstance(dtype, str) and dtype != "handle" and E.lanes_of(dtype) > 1:
                found.add((E.scalar_of(dtype), E.lanes_of(dtype)))

        for func in module.kernels:
            walk(func.body, visit)
        return found

    @staticmethod
    def _call_nodes(module: S.Module, name: str) -> list[E.Call]:
        """The module's calls of the intrinsic `name`."""
        from compiler_core.ir.visitor import walk

        found = []

        def visit(node):
            if isinstance(node, E.Call) and node.name == name:
                found.append(node)

        for func in module.kernels:
            walk(func.body, visit)
        return found

    @classmethod
    def _calls(cls, module: S.Module, name: str) -> bool:
        """Whether the module calls the intrinsic `name`."""
        return bool(cls._call_nodes(module, name))

    @classmethod
    def _amx_tiles(cls, module: S.Module) -> set:
        """The (row tiles, column tiles, gathered) of the module's AMX microkernel calls (c_amx.tile_helper renders
        each)."""
        return {(n.args[8].value, n.args[9].value, len(n.args) > 10) for n in cls._call_nodes(module, "amx_tile")}

    @staticmethod
    def _bf16_lanes(module: S.Module) -> set:
        """Lane counts at which bfloat16 values are converted or written as constants (their helpers)."""
        from compiler_core.ir.visitor import walk

        found: set = set()

        def visit(node):
            if isinstance(node, E.Cast) and "bfloat16" in (E.scalar_of(node.dtype), E.scalar_of(node.value.dtype)):
                found.add(E.lanes_of(node.dtype))
            elif isinstance(node, E.FloatImm) and E.scalar_of(node.dtype) == "bfloat16":
                found.add(1)

        for func in module.kernels:
            walk(func.body, visit)
        return found

    def _half_conversions(self, module: S.Module) -> tuple[set, bool]:
        """How the module's float16 conversions render: the lane counts converted on the bits (c_half.f16_helpers; 1:
        scalar), where a template asks (f16_load / f16_store) and with f16_bits every conversion between float16 and
        float32; and whether any vector converts by the F16C intrinsics (the source then includes immintrin.h)."""
        from compiler_core.ir.visitor import walk

        bits: set = set()
        f16c = []

        def visit(node):
            if isinstance(node, E.Call) and node.name in ("f16_load", "f16_store"):
                bits.add(1)
            elif (isinstance(node, E.Cast)
                    and {E.scalar_of(node.dtype), E.scalar_of(node.value.dtype)} == {"float16", "float32"}):
                lanes = E.lanes_of(node.dtype)
                if lanes in self.f16c_lanes:
                    f16c.append(node)
                elif self.f16_bits:
                    bits.add(lanes)

        for func in module.kernels:
            walk(func.body, visit)
        return bits, bool(f16c)

    @staticmethod
    def _math_calls(module: S.Module) -> tuple[set, set]:
        """The math calls that need a helper definition: (name, scalar, lanes) of the vector ones, and the names of
        the float32 scalar ones rendered inline (sigmoid's as exp)."""
        from compiler_core.ir.visitor import walk

        vector: set = set()
        scalar: set = set()

        def visit(node):
            if not isinstance(node, E.Call):
                return
            if E.lanes_of(node.dtype) > 1:
                if node.name in VECTOR_MATH:
                    vector.add((node.name, E.scalar_of(node.dtype), E.lanes_of(node.dtype)))
            elif E.scalar_of(node.dtype) == "float32" and node.name in (*LIBM, "sigmoid"):
                scalar.add("exp" if node.name == "sigmoid" else node.name)

        for func in module.kernels:
            walk(func.body, visit)
        return vector, scalar
