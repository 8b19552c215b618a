"""The codegen visitor: one method per IR node; targets subclass it and override what differs."""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.expr import lanes_of, scalar_of

BINARY_SYMBOLS = {"+": "+", "-": "-", "*": "*", "/": "/", "//": "/", "%": "%", "<": "<", "<=": "<=",
                  "==": "==", "!=": "!=", "&&": "&&", "||": "||",
                  ">>": ">>", "&": "&"}


class CodegenBase:
    """Renders a lowered Module (flattened, launch dims inferred) to source text."""

    scalar_types = {"float32": "float", "int32": "int", "int64": "long long", "bool": "int"}
    float_suffix = "f"

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.indent = 0
        self.func: S.PrimFunc | None = None

    # ---- helpers -------------------------------------------------------------------------
    def line(self, text: str) -> None:
        self.lines.append("  " * self.indent + text)

    def type_of(self, dtype: str) -> str:
        lanes = lanes_of(dtype)
        base = self.scalar_types[scalar_of(dtype)]
        return base if lanes == 1 else self.vector_type(scalar_of(dtype), lanes)

    def vector_type(self, scalar: str, lanes: int) -> str:
        raise NotImplementedError

    def index(self, indices: tuple) -> str:
        assert len(indices) == 1, "codegen needs flattened buffers (run the flatten pass)"
        return self.expr(indices[0])

    # ---- expressions ---------------------------------------------------------------------
    def expr(self, e: E.Expr) -> str:
        return getattr(self, "expr_" + type(e).__name__)(e)

    def expr_IntImm(self, e: E.IntImm) -> str:
        return str(e.value)

    def expr_FloatImm(self, e: E.FloatImm) -> str:
        v = e.value
        if v == float("inf"):
            return "INFINITY"
        if v == float("-inf"):
            return "(-INFINITY)"
        return f"{v!r}{self.float_suffix}" if scalar_of(e.dtype) == "float32" else self.half_literal(v, e.dtype)

    def half_literal(self, v: float, dtype: str) -> str:
        """A constant of a half storage type: the float32 literal converted as the target converts."""
        return f"(({self.type_of(dtype)}){v!r}f)"

    def expr_Var(self, e: E.Var) -> str:
        return e.name

    def expr_BinOp(self, e: E.BinOp) -> str:
        if e.op in ("min", "max"):
            return self.minmax(e.op, e.a, e.b, e.dtype)
        return f"({self.expr(e.a)} {BINARY_SYMBOLS[e.op]} {self.expr(e.b)})"

    def minmax(self, op: str, a: E.Expr, b: E.Expr, dtype: str) -> str:
        if scalar_of(dtype) == "float32" and lanes_of(dtype) == 1:
            return f"f{op}f({self.expr(a)}, {self.expr(b)})"
        sym = "<" if op == "min" else ">"
        x, y = self.expr(a), self.expr(b)
        return f"(({x}) {sym} ({y}) ? ({x}) : ({y}))"

    def expr_Not(self, e: E.Not) -> str:
        return f"(!{self.expr(e.a)})"

    def expr_Select(self, e: E.Select) -> str:
        return f"({self.expr(e.cond)} ? {self.expr(e.true_value)} : {self.expr(e.false_value)})"

    def expr_Cast(self, e: E.Cast) -> str:
        return f"(({self.type_of(e.dtype)})({self.expr(e.value)}))"

    def expr_Load(self, e: E.Load) -> str:
        if e.lanes == 1:
            return f"{e.buffer.name}[{self.index(e.indices)}]"
        return f"(*({self.type_of(e.dtype)}*)(&{e.buffer.name}[{self.index(e.indices)}]))"

    def expr_Address(self, e: E.Address) -> str:
        return f"(&{e.buffer.name}[{self.index(e.indices)}])"

    def expr_Call(self, e: E.Call) -> str:
        method = getattr(self, "intrin_" + e.name, None)
        if method is not None:
            return method(*e.args)
        return self.math_call(e.name, [self.expr(a) for a in e.args], e.dtype)

    def math_call(self, name: str, args: list[str], dtype: str) -> str:
        if name == "rsqrt":
            return f"(1.0f / sqrtf({args[0]}))"
        if name == "sigmoid":
            return f"(1.0f / (1.0f + expf(-({args[0]}))))"
        return f"{name}f({', '.join(args)})"

    # ---- statements ----------------------------------------------------------------------
    def stmt(self, s: S.Stmt) -> None:
        getattr(self, "stmt_" + type(s).__name__)(s)

    def stmt_Seq(self, s: S.Seq) -> None:
        for child in s.stmts:
            self.stmt(child)

    def stmt_Store(self, s: S.Store) -> None:
        target = f"{s.buffer.name}[{self.index(s.indices)}]"
        if s.lanes > 1:
            target = f"(*({self.type_of(s.value.dtype)}*)(&{target}))"
        self.line(f"{target} = {self.expr(s.value)};")

    def stmt_IfThenElse(self, s: S.IfThenElse) -> None:
        self.line(f"if ({self.expr(s.cond)}) {{")
        self.body(s.then)
        if s.else_ is not None:
            self.line("} else {")
            self.body(s.else_)
        self.line("}")

    def stmt_LetStmt(self, s: S.LetStmt) -> None:
        self.line(f"const {self.type_of(s.var.dtype)} {s.var.name} = {self.expr(s.value)};")
        self.stmt(s.body)

    def stmt_Evaluate(self, s: S.Evaluate) -> None:
        self.line(self.expr(s.value) + ";")

    def stmt_For(self, s: S.For) -> None:
        if s.kind.is_thread_binding:
            self.thread_binding(s)
            return
        self.loop_pragma(s)
        v, lo = s.var.name, self.expr(s.min) if s.min is not None else "0"
        hi = self.expr(s.extent) if s.min is None else self.expr(s.min + s.extent)
        self.line(f"for (int {v} = {lo}; {v} < {hi}; ++{v}) {{")
        self.body(s.body)
        self.line("}")

    def body(self, s: S.Stmt) -> None:
        self.indent += 1
        self.stmt(s)
        self.indent -= 1

    def loop_pragma(self, s: S.For) -> None:
        pass

    def thread_binding(self, s: S.For) -> None:
        raise NotImplementedError(f"{type(self).__name__} cannot bind loops to {s.kind.value}")

    # ---- module --------------------------------------------------------------------------
    def param_decl(self, buf: S.Buffer, written: bool) -> str:
        const = "" if written else "const "
        return f"{const}{self.type_of(buf.dtype)}* __restrict__ {buf.name}"

    def render(self, module: S.Module) -> str:
        raise NotImplementedError


def written_buffers(stmt: S.Stmt) -> set:
    from compiler_core.ir.visitor import walk

    out: set = set()

    def visit(node):
        if isinstance(node, S.Store):
            out.add(node.buffer)
        elif isinstance(node, E.Call) and node.name in ("cp_async", "wmma_store", "f16_store", "amx_tile"):
            out.add(node.args[0].buffer)

    walk(stmt, visit)
    return out
