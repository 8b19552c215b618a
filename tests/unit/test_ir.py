"""The loop IR: constant folding, the builder, substitute/walk, buffer layout."""
from __future__ import annotations

import pytest

from compiler_core.ir import (
    Allocate,
    Barrier,
    BinOp,
    Buffer,
    Evaluate,
    FloatImm,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    IRBuilder,
    LetStmt,
    Load,
    Scope,
    Select,
    Seq,
    Store,
    Var,
    binop,
    call,
    cast,
    ceil_div,
    max_,
    min_,
    select,
    seq,
)
from compiler_core.ir.expr import lanes_of, scalar_of, with_lanes
from compiler_core.ir.stmt import dtype_bytes
from compiler_core.ir.visitor import Mutator, substitute, walk


def _int(e) -> int:
    assert isinstance(e, IntImm), f"expected a folded constant, got {e!r}"
    return e.value


# ---- expressions -----------------------------------------------------------------------------
@pytest.mark.parametrize("op, a, b, expected", [
    ("+", 2, 3, 5), ("-", 2, 7, -5), ("*", 6, 7, 42), ("//", 7, 2, 3), ("//", -7, 2, -4), ("%", 7, 3, 1),
    ("min", 4, 9, 4), ("max", 4, 9, 9), ("<", 1, 2, 1), ("<=", 3, 2, 0), ("==", 5, 5, 1), ("!=", 5, 5, 0),
    ("&&", 1, 0, 0), ("||", 1, 0, 1),
])
def test_integer_constants_fold(op, a, b, expected):
    assert _int(binop(op, a, b)) == expected


def test_comparisons_fold_to_bool_and_arithmetic_keeps_int32():
    assert binop("<", 1, 2).dtype == "bool"
    assert binop("+", 1, 2).dtype == "int32"
    x = Var("x")
    assert (x < 4).dtype == "bool" and (x.eq(4)).dtype == "bool"


def test_constant_division_by_zero_is_an_error():
    with pytest.raises(ZeroDivisionError):
        binop("//", 4, 0)
    with pytest.raises(ZeroDivisionError):
        binop("%", 4, 0)


def test_integer_identities_simplify():
    x = Var("x")
    assert x + 0 is x and 0 + x is x and x - 0 is x
    assert x * 1 is x and 1 * x is x and x // 1 is x
    assert _int(x * 0) == 0 and _int(0 * x) == 0 and _int(x % 1) == 0


def test_non_constant_expressions_are_kept():
    x, y = Var("x"), Var("y")
    e = x * 4 + y
    assert isinstance(e, BinOp) and e.op == "+" and isinstance(e.a, BinOp) and e.a.op == "*"
    assert (x - 1).op == "-"


def test_float_and_int_mix_promotes_to_float():
    e = binop("+", FloatImm(1.5), 2)
    assert isinstance(e, BinOp) and isinstance(e.b, FloatImm) and e.b.value == 2.0
    assert e.dtype == "float32"
    assert (Var("i") * FloatImm(2.0, "float16")).dtype == "float32"  # half types compute in float32


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
def test_half_values_are_widened_for_math_and_narrowed_once_when_stored(half):
    from compiler_core.ir.builder import IRBuilder
    from compiler_core.ir.expr import Cast, Load, Select, select
    from compiler_core.ir.stmt import Buffer, Scope

    X, Y = Buffer("X", half, (8,)), Buffer("Y", half, (8,))
    acc = Buffer("acc", "float32", (1,), Scope.LOCAL)
    e = X[0] * X[1]
    assert e.dtype == "float32" and all(isinstance(s, Cast) and s.dtype == "float32" for s in (e.a, e.b))
    assert (X[0] < X[1]).a.dtype == "float32"  # comparisons too
    vec = binop("+", Load(X, (IntImm(0),), 4), Load(X, (IntImm(4),), 4))
    assert vec.dtype == "float32x4"
    s = select(Var("c", "bool"), X[0], FloatImm(0.0))
    assert isinstance(s, Select) and s.dtype == "float32"
    b = IRBuilder()
    b.store(Y, 0, e)  # float32 into a half buffer: one narrowing
    b.store(acc, 0, X[2])  # a half load into a float32 slot: widened
    b.store(Y, 1, X[3])  # same type: moved as is (bits)
    narrow, widen_, move = b.get().stmts
    assert isinstance(narrow.value, Cast) and narrow.value.dtype == half
    assert isinstance(widen_.value, Cast) and widen_.value.dtype == "float32"
    assert isinstance(move.value, Load)
    with b.let("v", X[4], "float32") as v:
        pass
    assert isinstance(b.get().stmts[-1].value, Cast) and v.dtype == "float32"


def test_select_cast_min_max_helpers():
    x = Var("x")
    t, f = FloatImm(1.0), FloatImm(2.0)
    assert select(IntImm(1, "bool"), t, f) is t and select(IntImm(0, "bool"), t, f) is f
    assert isinstance(select(x < 1, t, f), Select)
    assert cast("int32", x) is x
    folded = cast("float32", 3)
    assert isinstance(folded, FloatImm) and folded.value == 3.0
    assert cast("float16", Var("h", "float32")).dtype == "float16"
    assert _int(min_(3, 8)) == 3 and _int(max_(3, 8)) == 8
    assert min_(x, 8).op == "min"


def test_call_and_ceil_div():
    c = call("expf", Var("v", "float32"))
    assert c.name == "expf" and c.dtype == "float32" and len(c.args) == 1
    assert ceil_div(10, 4) == 3 and ceil_div(8, 4) == 2 and ceil_div(1, 256) == 1


def test_vector_dtype_helpers():
    assert scalar_of("float32x4") == "float32" and lanes_of("float32x4") == 4 and lanes_of("float16") == 1
    assert with_lanes("float16", 8) == "float16x8" and with_lanes("float32x4", 1) == "float32"
    assert dtype_bytes("float32x8") == 32 and dtype_bytes("float16x2") == 4 and dtype_bytes("int64") == 8
    buf = Buffer("g", "float32", (16,))
    assert Load(buf, (IntImm(0),), 4).dtype == "float32x4"


# ---- buffers -----------------------------------------------------------------------------------
def test_buffer_strides_without_pad_are_row_major():
    b = Buffer("a", "float32", (2, 3, 4))
    assert b.strides == (12, 4, 1)
    assert b.physical_elems == 24 and b.nbytes == 96


def test_buffer_pad_widens_the_innermost_row_only():
    b = Buffer("s", "float32", (4, 8), Scope.SHARED, pad=1)
    assert b.strides == (9, 1)
    assert b.physical_elems == 36 and b.nbytes == 144
    b3 = Buffer("t", "float16", (2, 3, 4), Scope.SHARED, pad=1)
    assert b3.strides == (15, 5, 1)
    assert b3.physical_elems == 30 and b3.nbytes == 60


def test_buffer_pad_is_ignored_for_one_dimensional_buffers():
    b = Buffer("v", "float32", (8,), pad=3)
    assert b.strides == (1,) and b.physical_elems == 8


def test_vector_typed_buffer_bytes():
    b = Buffer("r", "float32x8", (4,), Scope.LOCAL)
    assert b.nbytes == 4 * 32


def test_buffer_indexing_builds_loads():
    b = Buffer("a", "float32", (4, 4))
    i = Var("i")
    load = b[i, 2]
    assert isinstance(load, Load) and load.buffer is b and load.indices[0] is i and _int(load.indices[1]) == 2


# ---- builder -----------------------------------------------------------------------------------
def test_builder_nests_loops_allocations_lets_and_conditions():
    out = Buffer("out", "float32", (64,))
    b = IRBuilder()
    with b.loop("bx", 4, ForKind.BLOCK_X) as bx:
        with b.loop("tx", 16, ForKind.THREAD_X) as tx:
            with b.allocate("tmp", "float32", (2,), Scope.LOCAL) as tmp:
                with b.let("e", bx * 16 + tx) as e:
                    with b.if_(e < 60):
                        b.store(tmp, 0, 1.5)
                        b.store(out, e, tmp[0])
    root = b.get()
    assert isinstance(root, For) and root.kind is ForKind.BLOCK_X and _int(root.extent) == 4
    inner = root.body
    assert isinstance(inner, For) and inner.kind is ForKind.THREAD_X and inner.var.name == "tx"
    alloc = inner.body
    assert isinstance(alloc, Allocate) and alloc.buffer.scope is Scope.LOCAL and alloc.buffer.shape == (2,)
    let = alloc.body
    assert isinstance(let, LetStmt) and let.var.name == "e"
    cond = let.body
    assert isinstance(cond, IfThenElse) and cond.else_ is None
    assert isinstance(cond.then, Seq) and len(cond.then.stmts) == 2
    first, second = cond.then.stmts
    assert isinstance(first, Store) and isinstance(first.value, FloatImm) and first.indices[0].value == 0
    assert isinstance(second, Store) and second.indices[0] is let.var


def test_builder_store_converts_python_values_to_the_buffer_dtype():
    h = Buffer("h", "float16", (4,))
    b = IRBuilder()
    b.store(h, (1,), 0.5)
    s = b.get()
    assert isinstance(s, Store) and s.value.dtype == "float16" and s.lanes == 1


def test_builder_if_else_and_effects():
    x = Var("x")
    b = IRBuilder()
    with b.if_else(x < 3) as otherwise:
        b.barrier()
        otherwise()
        b.evaluate(call("foo", x))
    s = b.get()
    assert isinstance(s, IfThenElse) and isinstance(s.then, Barrier) and isinstance(s.else_, Evaluate)


def test_builder_rejects_unclosed_blocks():
    b = IRBuilder()
    ctx = b.loop("i", 4)
    ctx.__enter__()
    with pytest.raises(AssertionError):
        b.get()


def test_seq_flattens_and_unwraps_single_statements():
    a, c = Barrier(), Barrier()
    assert seq([a]) is a
    nested = seq([Seq((a,)), None, c])
    assert isinstance(nested, Seq) and nested.stmts == (a, c)


# ---- traversal ---------------------------------------------------------------------------------
def test_substitute_replaces_by_identity_and_refolds():
    x, y = Var("x"), Var("y")
    assert _int(substitute(x * 4 + 1, {x: 2})) == 9
    other_x = Var("x")  # same name, different variable: untouched
    e = substitute(other_x + y, {x: 5})
    assert isinstance(e, BinOp) and e.a is other_x
    partial = substitute(x * 4 + y, {y: 0})
    assert isinstance(partial, BinOp) and partial.op == "*"


def test_substitute_reaches_into_statements_and_keeps_unchanged_nodes():
    buf = Buffer("a", "float32", (8,))
    i = Var("i")
    store = Store(buf, (i + 1,), buf[i])
    new = substitute(store, {i: 3})
    assert _int(new.indices[0]) == 4 and _int(new.value.indices[0]) == 3
    unchanged = substitute(store, {Var("z"): 1})
    assert unchanged is store


def test_walk_visits_parents_before_children_and_every_node():
    buf = Buffer("a", "float32", (8,))
    i = Var("i")
    loop = For(i, IntImm(8), ForKind.SERIAL, Store(buf, (i,), buf[i] * FloatImm(2.0)))
    seen = []
    walk(loop, seen.append)
    names = [type(n).__name__ for n in seen]
    assert names[0] == "For" and names.index("Store") < names.index("BinOp") < names.index("Load")
    assert sum(n is i for n in seen) == 3  # loop var, store index, load index


def test_mutator_visit_method_rewrites_one_node_type():
    class Double(Mutator):
        def visit_IntImm(self, node):
            return IntImm(node.value * 2)

    x = Var("x")
    e = Double().visit(x + 3)
    assert isinstance(e, BinOp) and _int(e.b) == 6
