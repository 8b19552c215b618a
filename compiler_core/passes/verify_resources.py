"""Pass: reject kernels over the target's limits (threads per block, grid, static and dynamic shared memory,
registers); a kernel its template rendered (OpaqueKernel) is checked on the numbers it declares, plus the tensor
cores it needs and TMA's rules for its tensor maps."""
from __future__ import annotations

from compiler_core.errors import ResourceError
from compiler_core.ir import stmt as S
from compiler_core.ir.opaque import OpaqueKernel
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
        elif isinstance(node, S.Allocate) and node.buffer.scope in (S.Scope.WMMA_A, S.Scope.WMMA_B,
                                                                             S.Scope.WMMA_B_COL):
            words[0] += 8 * node.buffer.physical_elems

    walk(func.body, visit)
    return BASE_REGISTERS + words[0]


def verify_resources(module: S.Module, target) -> S.Module:
    for f in module.kernels:
        if isinstance(f, OpaqueKernel):
            _verify_opaque(f, target)
            continue
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


MAX_PORTABLE_CLUSTER = 8  # CTAs per cluster any sm_90 device launches without opting in to a larger size


def _verify_opaque(f: OpaqueKernel, target) -> None:
    from compiler_core.runtime.tensor_map import TensorMapError, spec_of  # TMA's rules live beside the encoder

    threads = f.block[0] * f.block[1] * f.block[2]
    if threads > target.max_threads_per_block:
        raise ResourceError(f"{f.name}: {threads} threads per block > {target.max_threads_per_block}")
    if f.shared_bytes + f.dynamic_shared_bytes > target.shared_limit:
        raise ResourceError(f"{f.name}: {f.dynamic_shared_bytes} B dynamic shared memory > {target.shared_limit} B, "
                            f"{target.arch}'s opt-in limit per block")
    missing = [family for family in f.requires if not target.has_tensor_cores(family)]
    if missing:
        raise ResourceError(f"{f.name}: needs {', '.join(missing)} tensor cores; {target.arch} has "
                            f"{', '.join(target.tensor_cores) or 'none'}")
    if not 1 <= f.cluster <= MAX_PORTABLE_CLUSTER or (f.cluster > 1 and target.sm < 90):
        raise ResourceError(f"{f.name}: clusters of {f.cluster} CTAs need sm_90 and at most {MAX_PORTABLE_CLUSTER}")
    registers = f.profile.registers if f.profile else BASE_REGISTERS
    if registers > target.max_registers_per_thread:
        raise ResourceError(f"{f.name}: ~{registers} registers per thread > {target.max_registers_per_thread}")
    for tm in f.tensor_maps:
        try:
            spec_of(tm)
        except TensorMapError as exc:
            raise ResourceError(f"{f.name}: the tensor map of {tm.buffer.name} breaks TMA's rules: {exc}") from None
    f.attrs["registers_estimate"] = registers
