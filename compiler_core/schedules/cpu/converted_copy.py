"""Copies between a half-typed buffer and a float32 one, a vector at a time: GCC 12 leaves a loop of _Float16 casts
scalar, where one vector conversion (F16C's instruction, or the C backend's whole-vector helpers) does `lanes`."""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder


def copy_converted(b: IRBuilder, dst: S.Buffer, dst_at, src: S.Buffer, src_at, width, lanes: int,
                   names: tuple[str, str] = ("cv", "cj")) -> None:
    """dst[dst_at(k)] = src[src_at(k)] in dst's dtype for k < width (a number or an expression), `lanes` at a time,
    then the last width % lanes one by one (unrolled where width is a number, else in loop names[1]). dst_at and
    src_at give index tuples; k's elements are contiguous in both."""
    def loaded(k, n=1) -> E.Load:
        return E.Load(src, tuple(E.as_expr(x) for x in src_at(k)), n)

    whole = width // lanes
    if not isinstance(whole, int) or whole:
        with b.loop(names[0], whole) as v:
            b.store(dst, dst_at(v * lanes), E.cast(f"{dst.dtype}x{lanes}", loaded(v * lanes, lanes)), lanes)
    if isinstance(width, int):
        for k in range(whole * lanes, width):
            b.store(dst, dst_at(k), E.cast(dst.dtype, loaded(k)))
        return
    with b.loop(names[1], width - whole * lanes) as j:
        k = whole * lanes + j
        b.store(dst, dst_at(k), E.cast(dst.dtype, loaded(k)))


def half_source(value: E.Expr) -> E.Load | None:
    """The load under a float32 cast of one element of a half-typed buffer (what a copy could convert by vectors),
    else None."""
    if isinstance(value, E.Cast) and isinstance(value.value, E.Load):
        load = value.value
        if E.scalar_of(load.dtype) in ("float16", "bfloat16") and load.lanes == 1:
            return load
    return None
