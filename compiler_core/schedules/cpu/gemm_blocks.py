"""The CPU GEMM's blocking arithmetic, shared by its FMA and bfloat16-pair paths: sizes rounded to whole tiles, and
trip counts and block lengths as loop-IR expressions."""
from __future__ import annotations

from compiler_core.ir import expr as E


def round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def cdiv(x, y: int) -> E.Expr:
    """ceil(x / y) for an expression x (a non-positive x gives 0 or less: an empty loop)."""
    return E.binop("//", E.binop("+", x, y - 1), y)


def block_len(total: int, block: int, idx: E.Expr) -> E.Expr:
    """Length of block `idx` of `total` split by `block`: a constant when every block is full."""
    if total % block == 0:
        return E.IntImm(block)
    return E.min_(total - idx * block, block)
