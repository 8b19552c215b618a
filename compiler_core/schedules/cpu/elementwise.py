"""CPU template for elementwise chains: OpenMP over row tiles, column tiles vectorized by the host compiler."""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.ops import expr_parser
from compiler_core.ops.elementwise import vector_names
from compiler_core.space import Knob, Space


def space(w, target) -> Space:
    # Tiles larger than the row are clamped to it, so every combination is valid for every shape.
    return Space(
        knobs=(
            Knob("rows_per_task", (1, 2, 4, 8, 16, 64), "rows one OpenMP iteration handles"),
            Knob("col_tile", (64, 256, 1024, 4096, 16384), "columns per inner (vectorized) loop"),
            Knob("simd", (0, 1), "mark the inner loop `omp simd`"),
        ),
    )


def schedule(w, config, target) -> S.Module:
    rows, cols, dt = w["rows"], w["cols"], w.dtype
    tree = expr_parser.parse(w["expr"])
    vectors = set(vector_names(w))
    names = expr_parser.input_names(tree)
    ins = {n: S.Buffer(f"in_{n}", dt, (cols,) if n in vectors else (rows, cols)) for n in names}
    out = S.Buffer("out_Y", dt, (rows, cols))
    rpt, ct = config["rows_per_task"], min(config["col_tile"], cols)
    inner_kind = S.ForKind.VECTORIZED if config["simd"] else S.ForKind.SERIAL
    b = IRBuilder()
    with b.loop("rt", E.ceil_div(rows, rpt), S.ForKind.PARALLEL) as rt:
        with b.loop("ri", rpt) as ri:
            i = rt * rpt + ri
            with b.if_(i < rows):
                with b.loop("jt", E.ceil_div(cols, ct)) as jt:
                    full = cols % ct == 0
                    with b.loop("ji", ct, inner_kind) as ji:
                        j = jt * ct + ji
                        env = {n: E.cast("float32", buf[j] if n in vectors else buf[i, j]) for n, buf in ins.items()}
                        value = E.cast(dt, expr_parser.to_ir(tree, env))
                        if full:
                            b.store(out, (i, j), value)
                        else:
                            with b.if_(j < cols):
                                b.store(out, (i, j), value)
    func = S.PrimFunc("elementwise_cpu", (*ins.values(), out), b.get())
    return S.Module("elementwise", (func,), (*ins.values(), out), (), len(ins))
