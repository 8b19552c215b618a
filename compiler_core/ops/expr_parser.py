"""A recursive-descent parser for elementwise expressions such as `gelu(x*w+b)`; never uses eval."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from compiler_core.errors import WorkloadError
from compiler_core.ir import expr as E

MAX_EXPR_CHARS = 256
MAX_INPUTS = 8
MAX_DEPTH = 32
# Kernels evaluate in float32: a literal must be 0 or a normal float32 (beyond FLOAT32_MAX it would be inf,
# below FLOAT32_TINY subnormal or 0, and the float64 reference would disagree with the kernel).
FLOAT32_MAX = 3.4028234663852886e38
FLOAT32_TINY = 1.1754943508222875e-38
# Words numpy, C or Python read as numbers: never input names (render(inf) would come back as a Name).
RESERVED_NAMES = ("inf", "infinity", "nan", "INFINITY", "NAN")
UNARY_FUNCS = ("relu", "gelu", "sigmoid", "silu", "tanh", "exp", "log", "sqrt", "rsqrt", "abs", "erf")
BINARY_FUNCS = ("max", "min")
_TOKEN = re.compile(r"\s*(?:(\d+\.\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|\d+(?:[eE][-+]?\d+)?)"
                    r"|([A-Za-z_][A-Za-z0-9_]*)|(.))")


@dataclass(frozen=True)
class Num:
    value: float


@dataclass(frozen=True)
class Name:
    id: str


@dataclass(frozen=True)
class Neg:
    x: object


@dataclass(frozen=True)
class Bin:
    op: str
    a: object
    b: object


@dataclass(frozen=True)
class Fn:
    name: str
    args: tuple


def _tokens(text: str) -> list[tuple[str, str]]:
    out = []
    for m in _TOKEN.finditer(text):
        num, name, sym = m.groups()
        if num:
            out.append(("num", num))
        elif name:
            out.append(("name", name))
        elif sym and not sym.isspace():
            if sym not in "+-*/(),":
                raise WorkloadError(f"elementwise: unexpected character {sym!r} in {text!r}; "
                                    "allowed: names, numbers, + - * / ( ) , and functions")
            out.append(("sym", sym))
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.text, self.toks, self.pos, self.depth = text, _tokens(text), 0, 0

    def error(self, what: str) -> WorkloadError:
        return WorkloadError(f"elementwise: malformed expression {self.text!r}: {what}")

    def peek(self):
        return self.toks[self.pos] if self.pos < len(self.toks) else ("end", "")

    def take(self, kind: str, value: str | None = None) -> str:
        k, v = self.peek()
        if k != kind or (value is not None and v != value):
            raise self.error(f"expected {value or kind}, found {v or 'end of input'!r}")
        self.pos += 1
        return v

    def parse(self):
        if not self.toks:
            raise self.error("empty")
        node = self.expr()
        if self.peek()[0] != "end":
            raise self.error(f"unexpected {self.peek()[1]!r}")
        return node

    def expr(self):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error(f"nested deeper than {MAX_DEPTH}")
        node = self.term()
        while self.peek() in (("sym", "+"), ("sym", "-")):
            op = self.take("sym")
            node = Bin(op, node, self.term())
        self.depth -= 1
        return node

    def term(self):
        node = self.unary()
        while self.peek() in (("sym", "*"), ("sym", "/")):
            op = self.take("sym")
            node = Bin(op, node, self.unary())
        return node

    def unary(self):
        if self.peek() == ("sym", "-"):
            self.take("sym", "-")
            return Neg(self.unary())
        return self.primary()

    def primary(self):
        kind, value = self.peek()
        if kind == "num":
            self.pos += 1
            number = float(value)
            if number != 0 and not FLOAT32_TINY <= number <= FLOAT32_MAX:
                raise self.error(f"number {value} is outside float32's range: literals must be 0 or between "
                                 f"{FLOAT32_TINY:.8g} and {FLOAT32_MAX:.8g} in magnitude")
            return Num(number)
        if kind == "sym" and value == "(":
            self.take("sym", "(")
            node = self.expr()
            self.take("sym", ")")
            return node
        if kind == "name":
            self.pos += 1
            if self.peek() != ("sym", "("):
                if value in UNARY_FUNCS + BINARY_FUNCS:
                    raise self.error(f"{value} is a function and needs arguments")
                if value.lower() in RESERVED_NAMES:
                    raise self.error(f"{value!r} cannot name an input (it reads as a number); "
                                     "write numbers as literals such as 3.5 or 1e30")
                return Name(value)
            return self.call(value)
        raise self.error(f"expected a value, found {value or 'end of input'!r}")

    def call(self, name: str):
        arity = 1 if name in UNARY_FUNCS else 2 if name in BINARY_FUNCS else 0
        if not arity:
            allowed = ", ".join(UNARY_FUNCS + BINARY_FUNCS)
            raise self.error(f"unknown function {name!r}; allowed: {allowed}")
        self.take("sym", "(")
        args = [self.expr()]
        while self.peek() == ("sym", ","):
            self.take("sym", ",")
            args.append(self.expr())
        self.take("sym", ")")
        if len(args) != arity:
            raise self.error(f"{name} takes {arity} argument(s), got {len(args)}")
        return Fn(name, tuple(args))


def parse(text: str):
    if len(text) > MAX_EXPR_CHARS:
        raise WorkloadError(f"elementwise: expression longer than {MAX_EXPR_CHARS} characters")
    tree = _Parser(text).parse()
    names = input_names(tree)
    if not names:
        raise WorkloadError(f"elementwise: expression {text!r} reads no input")
    if len(names) > MAX_INPUTS:
        raise WorkloadError(f"elementwise: {len(names)} inputs > {MAX_INPUTS}")
    return tree


def input_names(tree) -> list[str]:
    """Input names in order of first appearance."""
    out: list[str] = []

    def visit(n):
        if isinstance(n, Name) and n.id not in out:
            out.append(n.id)
        for child in _children(n):
            visit(child)

    visit(tree)
    return out


def function_names(tree) -> set[str]:
    """Names of the functions the tree calls."""
    found = {tree.name} if isinstance(tree, Fn) else set()
    for child in _children(tree):
        found |= function_names(child)
    return found


def _children(n) -> tuple:
    if isinstance(n, Neg):
        return (n.x,)
    if isinstance(n, Bin):
        return (n.a, n.b)
    if isinstance(n, Fn):
        return n.args
    return ()


_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}


def render(n, parent: int = 0, right: bool = False) -> str:
    """Canonical text (minimal parentheses): the form stored in workload keys."""
    if isinstance(n, Num):
        return repr(n.value) if not n.value.is_integer() else repr(n.value)
    if isinstance(n, Name):
        return n.id
    if isinstance(n, Neg):
        return f"-{render(n.x, 3)}"
    if isinstance(n, Fn):
        return f"{n.name}({','.join(render(a) for a in n.args)})"
    prec = _PRECEDENCE[n.op]
    text = f"{render(n.a, prec)}{n.op}{render(n.b, prec, right=True)}"
    return f"({text})" if prec < parent or (right and prec == parent) else text


def to_ir(n, env: dict) -> E.Expr:
    """IR expression (float32 arithmetic) with Names replaced by env[name]."""
    if isinstance(n, Num):
        return E.FloatImm(n.value)
    if isinstance(n, Name):
        return env[n.id]
    if isinstance(n, Neg):
        return -to_ir(n.x, env)
    if isinstance(n, Bin):
        return E.binop(n.op, to_ir(n.a, env), to_ir(n.b, env))
    args = [to_ir(a, env) for a in n.args]
    x = args[0]
    if n.name in BINARY_FUNCS:
        return E.binop(n.name, args[0], args[1])
    if n.name == "relu":
        return E.max_(x, E.FloatImm(0.0))
    if n.name == "gelu":
        return E.FloatImm(0.5) * x * (E.FloatImm(1.0) + E.call("erf", x * E.FloatImm(1 / math.sqrt(2))))
    if n.name == "silu":
        return x * E.call("sigmoid", x)
    if n.name == "abs":
        return E.call("fabs", x)
    return E.call(n.name, x)


# math.erf over arrays: libm's correctly rounded-or-nearly erf, elementwise (about 0.1 us an element; references are
# made once per workload). A closed-form approximation would be faster and less accurate than the float64 reference
# needs; scipy.special.erf was the only use of scipy.
_erf = np.vectorize(math.erf, otypes=[np.float64])


def erf(x):
    """Elementwise erf of a float64 array (an array) or scalar (a numpy scalar), as scipy.special.erf gives."""
    return _erf(x)[()]


def to_numpy(n, env: dict) -> np.ndarray:
    """float64 numpy evaluation, the reference semantics of every function."""
    if isinstance(n, Num):
        return np.float64(n.value)
    if isinstance(n, Name):
        return env[n.id]
    if isinstance(n, Neg):
        return -to_numpy(n.x, env)
    if isinstance(n, Bin):
        a, b = to_numpy(n.a, env), to_numpy(n.b, env)
        return {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}[n.op](a, b)
    args = [to_numpy(a, env) for a in n.args]
    x = args[0]
    with np.errstate(all="ignore"):
        table = {
            "max": lambda: np.maximum(args[0], args[1]), "min": lambda: np.minimum(args[0], args[1]),
            "relu": lambda: np.maximum(x, 0.0), "gelu": lambda: 0.5 * x * (1 + erf(x / math.sqrt(2))),
            "sigmoid": lambda: 1 / (1 + np.exp(-x)), "silu": lambda: x / (1 + np.exp(-x)),
            "tanh": lambda: np.tanh(x), "exp": lambda: np.exp(x), "log": lambda: np.log(x),
            "sqrt": lambda: np.sqrt(x), "rsqrt": lambda: 1 / np.sqrt(x), "abs": lambda: np.abs(x),
            "erf": lambda: erf(x),
        }
        return table[n.name]()
