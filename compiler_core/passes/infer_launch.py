"""Pass: grid and block dimensions come from the loops bound to blockIdx/threadIdx; shared bytes are summed."""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.visitor import walk


def _launch(func: S.PrimFunc) -> S.PrimFunc:
    grid, block, shared = [1, 1, 1], [1, 1, 1], [0]

    def visit(node):
        if isinstance(node, S.For) and node.kind.is_thread_binding:
            if not isinstance(node.extent, E.IntImm):
                raise ValueError(f"loop {node.var.name} bound to {node.kind.value} needs a constant extent")
            dims = grid if node.kind.name.startswith("BLOCK") else block
            axis = "XYZ".index(node.kind.name[-1])
            dims[axis] = max(dims[axis], node.extent.value)
        elif isinstance(node, S.Allocate) and node.buffer.scope is S.Scope.SHARED:
            shared[0] += node.buffer.nbytes

    walk(func.body, visit)
    return S.PrimFunc(func.name, func.params, func.body, tuple(grid), tuple(block), shared[0], func.attrs)


def infer_launch(module: S.Module, target) -> S.Module:
    return module.with_kernels(_launch(f) for f in module.kernels)
