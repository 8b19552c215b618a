"""TEST DOUBLE: an agent plugin (`--plugin tests.fault_plugin`) registering a test-only op `fault`.

Importing this module adds the op `fault(mode, n)` to compiler_core's OPS table and a schedule template for
it to the CPU (and CUDA) TEMPLATES tables, exactly as an operator's custom-op plugin would. Its kernel copies X to Y,
except that `mode` makes it misbehave the way a bad candidate kernel can:

- ok:       Y = X (verifies, gets measured)
- wrong:    Y = X + 1 (a wrong answer)
- segfault: stores 64 TiB below Y (an address never mapped): SIGSEGV on a CPU, an illegal address on a GPU
- hang:     a recurrence over 2^62 iterations that the compiler cannot fold away: never returns in practice

Everything goes through the normal pipeline (IR -> passes -> C codegen -> cc -> ctypes): only the IR is odd.
Never load it in production.
"""
from __future__ import annotations

import numpy as np

from compiler_core import te
from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.ops import OPS
from compiler_core.ops.base import OpDef, dtype_param
from compiler_core.space import Space
from compiler_core.workload import Param

MODES = ("ok", "wrong", "segfault", "hang")
WILD_OFFSET = -(1 << 44)  # elements: 64 TiB of float32 below the output buffer
HANG_EXTENT = (1 << 31) - 1


def _define(w):
    X = te.placeholder("X", (w["n"],), w.dtype)
    Y = te.compute("Y", (w["n"],), lambda i: X[i], w.dtype)
    return [X], [Y]


def _reference(w, inputs):
    return [inputs[0].astype(np.float64)]


FAULT = OpDef(
    name="fault",
    doc="TEST DOUBLE: copies X to Y, or misbehaves as `mode` says (wrong, segfault, hang)",
    params=(Param("mode", "str", choices=MODES, doc="how the kernel behaves"),
            Param("n", lo=1, hi=1 << 20, default=64, doc="elements"),
            dtype_param()),
    define=_define,
    reference=_reference,
    flops=lambda w: w["n"],
)


# ---- the CPU schedule template (module-level space/schedule, like compiler_core.schedules.cpu.*) ----------

def space(w, target) -> Space:
    return Space(knobs=())


def _body(b: IRBuilder, mode: str, i, X: S.Buffer, Y: S.Buffer) -> None:
    if mode == "ok":
        b.store(Y, (i,), X[i])
    elif mode == "wrong":
        b.store(Y, (i,), X[i] + E.FloatImm(1.0))
    elif mode == "segfault":  # on a GPU: an illegal address
        b.store(Y, (i + WILD_OFFSET,), X[i])
    else:  # hang
        b.store(Y, (i,), X[i])
        with b.loop("k1", HANG_EXTENT):
            with b.loop("k2", HANG_EXTENT):
                b.store(Y, (i,), Y[i] * E.FloatImm(0.5) + X[i])


def schedule(w, config, target) -> S.Module:
    """C: one serial loop; CUDA: blocks of up to 256 threads, one element each."""
    mode, n = w["mode"], w["n"]
    X = S.Buffer("in_X", w.dtype, (n,))
    Y = S.Buffer("out_Y", w.dtype, (n,))
    b = IRBuilder()
    if target.kind == "cuda":
        threads = min(n, 256)
        with b.loop("bx", E.ceil_div(n, threads), S.ForKind.BLOCK_X) as bx:
            with b.loop("tx", threads, S.ForKind.THREAD_X) as tx:
                with b.let("i", bx * threads + tx) as i:
                    with b.if_(i < n):
                        _body(b, mode, i, X, Y)
    else:
        with b.loop("i", n) as i:
            _body(b, mode, i, X, Y)
    func = S.PrimFunc(f"fault_{mode}", (X, Y), b.get())
    return S.Module("fault", (func,), (X, Y), (), 1)


def register() -> None:
    import sys

    from compiler_core.schedules import cpu, cuda

    OPS["fault"] = FAULT
    template = sys.modules[__name__]
    cpu.TEMPLATES["fault"] = template
    cuda.TEMPLATES["fault"] = template


register()
