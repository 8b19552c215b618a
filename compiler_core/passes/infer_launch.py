"""Pass: grid and block dimensions come from the loops bound to blockIdx/threadIdx; static shared bytes are summed;
dynamic shared buffers get their byte offsets in the launch's dynamic shared memory, in order of appearance, each
aligned to its buffer's `align` (TMA's 128-byte swizzle needs 1024)."""
from __future__ import annotations

import dataclasses

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.visitor import walk


def _launch(func: S.PrimFunc) -> S.PrimFunc:
    grid, block, shared = [1, 1, 1], [1, 1, 1], [0]
    dynamic, offsets = [0], {}

    def visit(node):
        if isinstance(node, S.For) and node.kind.is_thread_binding:
            if not isinstance(node.extent, E.IntImm):
                raise ValueError(f"loop {node.var.name} bound to {node.kind.value} needs a constant extent")
            dims = grid if node.kind.name.startswith("BLOCK") else block
            axis = "XYZ".index(node.kind.name[-1])
            dims[axis] = max(dims[axis], node.extent.value)
        elif isinstance(node, S.Allocate) and node.buffer.scope is S.Scope.SHARED:
            shared[0] += node.buffer.nbytes
        elif isinstance(node, S.Allocate) and node.buffer.scope is S.Scope.SHARED_DYN:
            if node.buffer.name in offsets:
                raise ValueError(f"two dynamic shared buffers are named {node.buffer.name!r}")
            start = -(-dynamic[0] // node.buffer.align) * node.buffer.align
            offsets[node.buffer.name] = start
            dynamic[0] = start + node.buffer.nbytes

    walk(func.body, visit)
    return dataclasses.replace(func, grid=tuple(grid), block=tuple(block), shared_bytes=shared[0],
                               dynamic_shared_bytes=dynamic[0], dynamic_offsets=offsets)


def infer_launch(module: S.Module, target) -> S.Module:
    return module.map_funcs(_launch)
