"""The op registry: one explicit name -> OpDef table."""
from __future__ import annotations

from compiler_core.errors import WorkloadError
from compiler_core.ops.attention import ATTENTION
from compiler_core.ops.base import OpDef, TensorSpec
from compiler_core.ops.conv2d import CONV2D
from compiler_core.ops.elementwise import ELEMENTWISE
from compiler_core.ops.gemm import BATCH_MATMUL, MATMUL
from compiler_core.ops.rowwise import LAYERNORM, REDUCE_SUM, SOFTMAX, TRANSPOSE

OPS: dict[str, OpDef] = {op.name: op for op in (
    MATMUL, BATCH_MATMUL, CONV2D, SOFTMAX, LAYERNORM, REDUCE_SUM, TRANSPOSE, ELEMENTWISE, ATTENTION)}


def get_op(name: str) -> OpDef:
    if not isinstance(name, str) or name not in OPS:
        raise WorkloadError(f"unknown op {name!r}; known ops: {', '.join(sorted(OPS))}")
    return OPS[name]


__all__ = ["OPS", "OpDef", "TensorSpec", "get_op"]
