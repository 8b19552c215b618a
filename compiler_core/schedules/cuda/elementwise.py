"""CUDA template for elementwise chains: a 1-D grid, each thread handles `items` elements strided by the block."""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.ops import expr_parser
from compiler_core.ops.elementwise import vector_names
from compiler_core.space import Constraint, Knob, Space


def space(w, target) -> Space:
    return Space(
        knobs=(
            Knob("threads", (64, 128, 256, 512, 1024), "threads per block"),
            Knob("items", (1, 2, 4, 8), "elements per thread (strided by the block, so loads stay coalesced)"),
        ),
        constraints=(
            Constraint("threads must not exceed the target's limit",
                       lambda c: c["threads"] <= target.max_threads_per_block),
        ),
    )


def schedule(w, config, target) -> S.Module:
    rows, cols, dt = w["rows"], w["cols"], w.dtype
    tree = expr_parser.parse(w["expr"])
    vectors = set(vector_names(w))
    names = expr_parser.input_names(tree)
    ins = {n: S.Buffer(f"in_{n}", dt, (cols,) if n in vectors else (rows * cols,)) for n in names}
    out = S.Buffer("out_Y", dt, (rows * cols,))
    threads, items = config["threads"], config["items"]
    total = rows * cols
    per_block = threads * items
    b = IRBuilder()
    with b.loop("bx", E.ceil_div(total, per_block), S.ForKind.BLOCK_X) as bx:
        with b.loop("tx", threads, S.ForKind.THREAD_X) as tx:
            with b.loop("it", items, S.ForKind.UNROLLED) as it:
                with b.let("e", bx * per_block + it * threads + tx) as e:
                    with b.if_(e < total):
                        env = {n: E.cast("float32", buf[e % cols] if n in vectors else buf[e])
                               for n, buf in ins.items()}
                        b.store(out, e, E.cast(dt, expr_parser.to_ir(tree, env)))
    func = S.PrimFunc("elementwise_cuda", (*ins.values(), out), b.get())
    # The module's args keep the op's logical shapes; kernels index them flat.
    return S.Module("elementwise", (func,), (*ins.values(), out), (), len(ins))
