"""Pass: reject kernels over the target's limits (threads per block, grid, static and dynamic shared memory,
registers)."""
from __future__ import annotations

from compiler_core.errors import ResourceError
from compiler_core.ir import stmt as S
from compiler_core.ir.visitor import walk

MAX_GRID_YZ = 65535
BASE_REGISTERS = 24  # addresses, loop counters and temporaries beside the explicit register arrays


def register_estimate(func: S.PrimFunc) -> int:
    words = [0]

    def visit(node):
        if isinstance(node, S.Allocate) and node.buffer.scope is S.Scope.LOCAL:
            words[0] += -(-node.buffer.nbytes // 4)
        elif isinstance(node, S.Allocate) and node.buffer.scope is S.Scope.WMMA_ACC:
            words[0] += 8 * node.buffer.physical_elems
        elif isinstance(node, S.Allocate) and node.buffer.scope in (S.Scope.WMMA_A, S.Scope.WMMA_B):
            words[0] += 8 * node.buffer.physical_elems

    walk(func.body, visit)
    return BASE_REGISTERS + words[0]


def verify_resources(module: S.Module, target) -> S.Module:
    for f in module.kernels:
        threads = f.block[0] * f.block[1] * f.block[2]
        if threads > target.max_threads_per_block:
            raise ResourceError(f"{f.name}: {threads} threads per block > {target.max_threads_per_block}")
        if f.grid[1] > MAX_GRID_YZ or f.grid[2] > MAX_GRID_YZ:
            raise ResourceError(f"{f.name}: grid {f.grid} exceeds {MAX_GRID_YZ} in y or z")
        if f.shared_bytes > target.max_shared_bytes:
            raise ResourceError(f"{f.name}: {f.shared_bytes} B static shared memory > {target.max_shared_bytes} B")
        if f.dynamic_shared_bytes and f.shared_bytes + f.dynamic_shared_bytes > target.shared_limit:
            raise ResourceError(f"{f.name}: {f.shared_bytes} B static + {f.dynamic_shared_bytes} B dynamic shared "
                                f"memory > {target.shared_limit} B, {target.arch}'s opt-in limit per block")
        regs = register_estimate(f)
        if regs > target.max_registers_per_thread:
            raise ResourceError(f"{f.name}: ~{regs} registers per thread > {target.max_registers_per_thread}")
        f.attrs["registers_estimate"] = regs
    return module
