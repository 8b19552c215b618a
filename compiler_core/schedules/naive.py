"""The schedule every op has: the tensor expression lowered literally, one kernel per compute stage.

It has no knobs. It is the semantic check of the op definitions (tests compare it with the numpy
references) and the untuned baseline that tuned templates are measured against.
"""
from __future__ import annotations

import contextlib

from compiler_core import te
from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.ir.visitor import Mutator, substitute, walk
from compiler_core.ops import get_op
from compiler_core.space import Space

CUDA_THREADS = 256


def space(workload, target) -> Space:
    return Space(knobs=())


class _ReadsToLoads(Mutator):
    def __init__(self, buffers: dict, acc: S.Buffer | None = None, reduce_node=None):
        self.buffers, self.acc, self.reduce_node = buffers, acc, reduce_node

    def visit_TensorRead(self, node: te.TensorRead):
        return E.Load(self.buffers[node.tensor], tuple(self.visit(i) for i in node.indices))

    def visit_Reduce(self, node: te.Reduce):
        assert node is self.reduce_node, "one reduction per compute stage"
        return E.Load(self.acc, (E.IntImm(0),))


def _find_reduce(body: E.Expr):
    found: list = []
    walk(body, lambda n: found.append(n) if isinstance(n, te.Reduce) else None)
    if len(found) > 1:
        raise NotImplementedError("naive lowering supports one reduction per compute stage")
    return found[0] if found else None


def _stage_body(b: IRBuilder, stage: te.ComputeTensor, axes: tuple, buffers: dict) -> None:
    body = substitute(stage.body, dict(zip(stage.axes, axes, strict=True)))
    red = _find_reduce(body)
    out = buffers[stage]
    if red is None:
        b.store(out, tuple(axes), _ReadsToLoads(buffers).visit(body))
        return
    with b.allocate(f"{stage.name}_acc", "float32", (1,), S.Scope.LOCAL) as acc:
        b.store(acc, (0,), E.FloatImm(te.REDUCE_IDENTITY[red.combiner]))
        with contextlib.ExitStack() as loops:
            for ax in red.axes:
                loops.enter_context(b.loop(ax.var, ax.extent))
            term = _ReadsToLoads(buffers).visit(red.body)
            cur = acc[0]
            b.store(acc, (0,), cur + term if red.combiner == "sum" else E.max_(cur, term))
        b.store(out, tuple(axes), _ReadsToLoads(buffers, acc, red).visit(body))


def _c_stage(stage, buffers) -> S.Stmt:
    b = IRBuilder()
    with contextlib.ExitStack() as loops:
        axes = tuple(
            loops.enter_context(b.loop(f"i{k}", extent, S.ForKind.PARALLEL if k == 0 else S.ForKind.SERIAL))
            for k, extent in enumerate(stage.shape))
        _stage_body(b, stage, axes, buffers)
    return b.get()


def _cuda_stage(stage, buffers) -> S.Stmt:
    total = 1
    for s in stage.shape:
        total *= s
    b = IRBuilder()
    with b.loop("bx", E.ceil_div(total, CUDA_THREADS), S.ForKind.BLOCK_X) as bx:
        with b.loop("tx", CUDA_THREADS, S.ForKind.THREAD_X) as tx:
            with b.let("flat", bx * CUDA_THREADS + tx) as flat:
                with b.if_(flat < total):
                    axes, rest = [], flat
                    for extent in reversed(stage.shape):
                        axes.append(rest % extent)
                        rest = rest // extent
                    _stage_body(b, stage, tuple(reversed(axes)), buffers)
    return b.get()


def schedule(workload, config, target) -> S.Module:
    inputs, outputs = get_op(workload.op).define(workload)
    all_stages = te.stages(outputs)
    buffers = {t: S.Buffer(f"in_{t.name}", t.dtype, t.shape) for t in inputs}
    buffers.update({t: S.Buffer(f"out_{t.name}", t.dtype, t.shape) for t in outputs})
    workspaces = [t for t in all_stages if t not in buffers]
    buffers.update({t: S.Buffer(f"ws_{t.name}", "float32", t.shape) for t in workspaces})
    params = tuple(buffers[t] for t in (*inputs, *outputs)) + tuple(buffers[t] for t in workspaces)
    lower_stage = _cuda_stage if target.kind == "cuda" else _c_stage
    kernels = [S.PrimFunc(f"{workload.op}_naive_{k}", params, lower_stage(stage, buffers))
               for k, stage in enumerate(all_stages)]
    args = tuple(buffers[t] for t in (*inputs, *outputs))
    return S.Module(f"{workload.op}_naive", tuple(kernels), args,
                    tuple(buffers[t] for t in workspaces), len(inputs))
