"""Expression nodes of the loop IR (also the bodies of tensor expressions)."""
from __future__ import annotations

from dataclasses import dataclass, field

INT_TYPES = ("int32", "int64", "bool")
# Storage-only float types: values are widened to float32 before any arithmetic or comparison (binop and
# select insert the Cast; math calls take the float32 results of arithmetic) and narrowed once when stored
# (IRBuilder.store), so every kernel computes in float32 whatever it reads and writes. bfloat16 has no C
# arithmetic at all (it is raw bits there).
HALF_TYPES = ("float16", "bfloat16")
FLOAT_TYPES = (*HALF_TYPES, "float32")


def scalar_of(dtype: str) -> str:
    """'float32x4' -> 'float32'."""
    return dtype.partition("x")[0]


def lanes_of(dtype: str) -> int:
    base = scalar_of(dtype)
    return int(dtype[len(base) + 1:]) if dtype != base else 1


def with_lanes(dtype: str, lanes: int) -> str:
    base = scalar_of(dtype)
    return base if lanes == 1 else f"{base}x{lanes}"


def as_expr(value: object, dtype: str | None = None) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool):
        return IntImm(int(value), "bool")
    if isinstance(value, int):
        return IntImm(value, dtype or "int32")
    if isinstance(value, float):
        return FloatImm(value, dtype or "float32")
    raise TypeError(f"cannot make an IR expression from {value!r}")


def _result_dtype(a: Expr, b: Expr) -> str:
    if a.dtype == b.dtype:
        return a.dtype
    if scalar_of(a.dtype) in FLOAT_TYPES and lanes_of(a.dtype) >= lanes_of(b.dtype):
        return a.dtype
    if scalar_of(b.dtype) in FLOAT_TYPES:
        return b.dtype
    return a.dtype if lanes_of(a.dtype) >= lanes_of(b.dtype) else b.dtype


_FOLD = {
    "+": lambda x, y: x + y,
    "-": lambda x, y: x - y,
    "*": lambda x, y: x * y,
    "//": lambda x, y: x // y,
    "%": lambda x, y: x % y,
    "min": min,
    "max": max,
    "<": lambda x, y: int(x < y),
    "<=": lambda x, y: int(x <= y),
    "==": lambda x, y: int(x == y),
    "!=": lambda x, y: int(x != y),
    "&&": lambda x, y: int(bool(x) and bool(y)),
    "||": lambda x, y: int(bool(x) or bool(y)),
    ">>": lambda x, y: x >> y,
    "&": lambda x, y: x & y,
}
COMPARISONS = ("<", "<=", "==", "!=", "&&", "||")


def widen(e: Expr) -> Expr:
    """A storage-only (half) value as the float32 it computes in; anything else unchanged."""
    if scalar_of(e.dtype) in HALF_TYPES:
        return cast(with_lanes("float32", lanes_of(e.dtype)), e)
    return e


def binop(op: str, a: object, b: object) -> Expr:
    """Build a binary node, folding integer constants and identities so indices stay readable."""
    a, b = widen(as_expr(a)), widen(as_expr(b))
    if isinstance(a, FloatImm) and isinstance(b, IntImm):
        b = FloatImm(float(b.value), a.dtype)
    if isinstance(b, FloatImm) and isinstance(a, IntImm):
        a = FloatImm(float(a.value), b.dtype)
    if isinstance(a, IntImm) and isinstance(b, IntImm) and op in _FOLD:
        if op in ("//", "%") and b.value == 0:
            raise ZeroDivisionError("constant division by zero in IR")
        dtype = "bool" if op in COMPARISONS else a.dtype
        return IntImm(_FOLD[op](a.value, b.value), dtype)
    if scalar_of(a.dtype) in INT_TYPES and scalar_of(b.dtype) in INT_TYPES:
        if op == "+" and _is_int(b, 0) or op == "-" and _is_int(b, 0):
            return a
        if op == "+" and _is_int(a, 0):
            return b
        if op == "*" and (_is_int(a, 0) or _is_int(b, 0)):
            return IntImm(0, a.dtype)
        if op in ("*", "//") and _is_int(b, 1) or op == "*" and _is_int(a, 1):
            return a if _is_int(b, 1) else b
        if op == "%" and _is_int(b, 1):
            return IntImm(0, a.dtype)
    dtype = "bool" if op in COMPARISONS else _result_dtype(a, b)
    return BinOp(op, a, b, dtype)


def _is_int(e: Expr, v: int) -> bool:
    return isinstance(e, IntImm) and e.value == v


class Expr:
    dtype: str

    def __add__(self, o): return binop("+", self, o)
    def __radd__(self, o): return binop("+", o, self)
    def __sub__(self, o): return binop("-", self, o)
    def __rsub__(self, o): return binop("-", o, self)
    def __mul__(self, o): return binop("*", self, o)
    def __rmul__(self, o): return binop("*", o, self)
    def __truediv__(self, o): return binop("/", self, o)
    def __rtruediv__(self, o): return binop("/", o, self)
    def __floordiv__(self, o): return binop("//", self, o)
    def __rfloordiv__(self, o): return binop("//", o, self)
    def __mod__(self, o): return binop("%", self, o)
    def __neg__(self): return binop("-", as_expr(0, self.dtype) if self.dtype in INT_TYPES
                                    else FloatImm(0.0, self.dtype), self)
    def __lt__(self, o): return binop("<", self, o)
    def __le__(self, o): return binop("<=", self, o)
    def __gt__(self, o): return binop("<", o, self)
    def __ge__(self, o): return binop("<=", o, self)
    def __and__(self, o): return binop("&&", self, o)
    def __or__(self, o): return binop("||", self, o)
    def eq(self, o): return binop("==", self, o)
    def ne(self, o): return binop("!=", self, o)
    __hash__ = object.__hash__


@dataclass(eq=False)
class IntImm(Expr):
    value: int
    dtype: str = "int32"


@dataclass(eq=False)
class FloatImm(Expr):
    value: float
    dtype: str = "float32"


@dataclass(eq=False)
class Var(Expr):
    name: str
    dtype: str = "int32"


@dataclass(eq=False)
class BinOp(Expr):
    op: str
    a: Expr
    b: Expr
    dtype: str


@dataclass(eq=False)
class Not(Expr):
    a: Expr
    dtype: str = "bool"


@dataclass(eq=False)
class Select(Expr):
    cond: Expr
    true_value: Expr
    false_value: Expr

    @property
    def dtype(self) -> str:
        return self.true_value.dtype


@dataclass(eq=False)
class Cast(Expr):
    dtype: str
    value: Expr


@dataclass(eq=False)
class Call(Expr):
    """A math function (expf, sqrtf, ...) or a target intrinsic (shfl_xor, cp_async, ...)."""
    name: str
    args: tuple
    dtype: str = "float32"


@dataclass(eq=False)
class Load(Expr):
    buffer: Buffer  # noqa: F821 - defined in ir.buffer
    indices: tuple
    lanes: int = 1

    @property
    def dtype(self) -> str:
        return self.buffer.dtype if self.lanes == 1 else with_lanes(self.buffer.dtype, self.lanes)


@dataclass(eq=False)
class Broadcast(Expr):
    value: Expr
    lanes: int

    @property
    def dtype(self) -> str:
        return with_lanes(self.value.dtype, self.lanes)


@dataclass(eq=False)
class Address(Expr):
    """Pointer to an element: what intrinsics such as cp.async and wmma loads take."""
    buffer: Buffer  # noqa: F821
    indices: tuple
    dtype: str = field(default="handle")


def select(cond, t, f) -> Expr:
    """cond ? t : f; branches of different float types meet in float32 (a half branch is widened)."""
    t, f = as_expr(t), as_expr(f)
    if t.dtype != f.dtype:
        t, f = widen(t), widen(f)
    if isinstance(cond, IntImm):
        return t if cond.value else f
    return Select(as_expr(cond), t, f)


def cast(dtype: str, value) -> Expr:
    value = as_expr(value)
    if value.dtype == dtype:
        return value
    if isinstance(value, (IntImm, FloatImm)) and dtype in FLOAT_TYPES:
        return FloatImm(float(value.value), dtype)
    return Cast(dtype, value)


def min_(a, b) -> Expr:
    return binop("min", a, b)


def max_(a, b) -> Expr:
    return binop("max", a, b)


def shift_right(a, bits: int) -> Expr:
    """Arithmetic shift right of an integer (bit fields of a packed table entry)."""
    return a if bits == 0 else binop(">>", a, bits)


def bit_and(a, mask: int) -> Expr:
    """Bitwise AND of an integer with a mask (`&` on Exprs is the logical AND)."""
    return binop("&", a, mask)


def call(name: str, *args, dtype: str = "float32") -> Expr:
    return Call(name, tuple(as_expr(a) for a in args), dtype)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def pow2_ceil(n: int) -> int:
    """The least power of two >= n (1 for n <= 1): the largest tile a space offers for an extent n."""
    return 1 << max(0, (n - 1).bit_length())
