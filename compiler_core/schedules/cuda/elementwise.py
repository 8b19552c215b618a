"""CUDA template for elementwise chains: a 1-D grid, each thread handles `items` elements strided by the block."""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.ops import expr_parser
from compiler_core.ops.elementwise import vector_names
from compiler_core.space import Constraint, Knob, Space
from compiler_core.target import NOMINAL_SM_COUNT

BLOCKS_PER_SM = 8  # the default's fewest blocks per SM


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


def default_config(w, target) -> dict:
    """256 threads and the most items per thread (8, 4, 2, 1) that still give every SM BLOCKS_PER_SM blocks. Over
    every config of 54 chains on the H200 (6 shapes from 64x768 to 8192^2, 3 chains, 3 dtypes;
    benchmarks/results/2026-11-30-gpu-elementwise/): 1.045x the fastest config's time (geometric mean; at worst
    1.16x), where the space's first config (64 x 1, the default before) took 2.31x (at worst 7.97x)."""
    threads = min(256, target.max_threads_per_block)
    blocks_wanted = BLOCKS_PER_SM * (target.sm_count or NOMINAL_SM_COUNT)
    total = w["rows"] * w["cols"]
    items = next((n for n in (8, 4, 2) if E.ceil_div(total, threads * n) >= blocks_wanted), 1)
    return {"threads": threads, "items": items}


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
