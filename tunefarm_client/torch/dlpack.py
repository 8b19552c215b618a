"""Run a tuned kernel on any framework's arrays through DLPack (NumPy, CuPy, JAX, ...): no copies either way."""
from __future__ import annotations

import torch

from tunefarm_client.torch.ops import KernelOp, custom_op


def as_tensor(array) -> torch.Tensor:
    """A torch view of a `__dlpack__` object's memory (torch tensors pass through). On CUDA the producer is asked
    to order its pending work before torch's current stream, which the kernel then runs on."""
    if isinstance(array, torch.Tensor):
        return array
    if not hasattr(array, "__dlpack__"):
        raise TypeError(f"expected a tensor or an object with __dlpack__, got {type(array).__name__}")
    return torch.from_dlpack(array)


def run_dlpack(kernel, *inputs, out=None):
    """Runs `kernel` (a KernelOp, a compiler_core Kernel or a LoadedKernel) on `__dlpack__` objects.

    Without `out`: returns the outputs as torch tensors (one, or a tuple); they are DLPack producers too, so
    `numpy.from_dlpack(t)` or `cupy.from_dlpack(t)` views them without a copy. With `out` (an object or a
    sequence of them, of the caller's framework, writable): writes into them and returns `out`.
    """
    op = kernel if isinstance(kernel, KernelOp) else custom_op(kernel)
    tensors = [as_tensor(a) for a in inputs]
    if out is None:
        return op(*tensors)
    outputs = (out,) if hasattr(out, "__dlpack__") else tuple(out)
    op(*tensors, out=[as_tensor(o) for o in outputs])
    return out
