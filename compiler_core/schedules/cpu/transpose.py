"""CPU template for a 2-D transpose Y[cols, rows] = X[rows, cols]^T: cache-blocked tiles, OpenMP over tiles.

A tile is T x T. Full tiles have constant loop extents (the host compiler unrolls and vectorizes them);
edge tiles, where rows or cols is not a multiple of T, run the same loops bounded by what is left.
`order` picks which side is contiguous in the inner loop: "read" walks X's rows, "write" walks Y's rows.
"""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.space import Knob, Space

TILES = (8, 16, 32, 64, 128)


def space(w, target) -> Space:
    return Space(
        knobs=(
            Knob("tile", TILES, "tile side T: a T x T block is read and written while it stays in cache"),
            Knob("order", ("read", "write"), "inner loop contiguous in X (read) or in Y (write)"),
            Knob("simd", (0, 1), "mark the inner tile loop `omp simd`"),
        ),
    )


def default_config(w, target) -> dict:
    return {"tile": 32 if max(w["rows"], w["cols"]) >= 16 else 8, "order": "write", "simd": 0}


def schedule(w, config, target) -> S.Module:
    rows, cols, dt = w["rows"], w["cols"], w.dtype
    X = S.Buffer("in_X", dt, (rows, cols))
    Y = S.Buffer("out_Y", dt, (cols, rows))
    tile = config["tile"]
    tiles_r, tiles_c = E.ceil_div(rows, tile), E.ceil_div(cols, tile)
    b = IRBuilder()
    with b.loop("t", tiles_r * tiles_c, S.ForKind.PARALLEL) as t:
        with b.let("i0", t // tiles_c * tile) as i0, b.let("j0", t % tiles_c * tile) as j0:
            def copy(ext_i, ext_j):
                _tile_copy(b, X, Y, i0, j0, ext_i, ext_j, config)

            if rows % tile == 0 and cols % tile == 0:
                copy(tile, tile)
            else:
                with b.if_else((i0 + tile <= rows) & (j0 + tile <= cols)) as otherwise:
                    copy(tile, tile)
                    otherwise()
                    copy(E.min_(rows - i0, tile), E.min_(cols - j0, tile))
    func = S.PrimFunc("transpose_cpu", (X, Y), b.get())
    return S.Module("transpose", (func,), (X, Y), (), 1)


def _tile_copy(b: IRBuilder, X, Y, i0, j0, ext_i, ext_j, config) -> None:
    inner = S.ForKind.VECTORIZED if config["simd"] else S.ForKind.SERIAL
    if config["order"] == "read":
        with b.loop("ii", ext_i) as ii, b.loop("jj", ext_j, inner) as jj:
            b.store(Y, (j0 + jj, i0 + ii), X[i0 + ii, j0 + jj])
    else:
        with b.loop("jj", ext_j) as jj, b.loop("ii", ext_i, inner) as ii:
            b.store(Y, (j0 + jj, i0 + ii), X[i0 + ii, j0 + jj])
