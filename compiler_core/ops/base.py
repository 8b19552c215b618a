"""OpDef: an op's signature, its tensor-expression definition, numpy reference and work counts."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from compiler_core.ir.stmt import dtype_bytes
from compiler_core.workload import Param, Workload

# Every op reads and writes any of these and computes in float32 (the half types are storage types).
FLOAT_DTYPES = ("float32", "float16", "bfloat16")


def dtype_param(choices=FLOAT_DTYPES) -> Param:
    return Param("dtype", "str", choices=tuple(choices), default="float32", doc="element type of inputs/outputs")


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple
    dtype: str


@dataclass(frozen=True)
class OpDef:
    name: str
    doc: str
    params: tuple
    define: Callable  # Workload -> (inputs: list[Placeholder], outputs: list[ComputeTensor])
    reference: Callable  # (Workload, list[np.ndarray]) -> list[np.ndarray] (float64)
    flops: Callable  # Workload -> int
    normalize: Callable | None = None  # Workload -> Workload (canonical form + cross-param checks)
    # (Workload, inputs, float64 reference outputs) -> per-element float64 error bounds, one per output
    tolerance: Callable | None = None
    hard_inputs: Callable | None = None  # (Workload, np.random.Generator) -> adversarial inputs
    # per input: whether axis 0 indexes independent rows (as it does for every output), so that the reference
    # and the tolerance of a block of rows need only that block of those inputs; () when rows are not independent
    row_split: tuple[bool, ...] = ()

    def tensor_specs(self, w: Workload) -> list[TensorSpec]:
        inputs, outputs = self.define(w)
        return [TensorSpec(t.name, t.shape, t.dtype) for t in (*inputs, *outputs)]

    def input_specs(self, w: Workload) -> list[TensorSpec]:
        inputs, _ = self.define(w)
        return [TensorSpec(t.name, t.shape, t.dtype) for t in inputs]

    def output_specs(self, w: Workload) -> list[TensorSpec]:
        _, outputs = self.define(w)
        return [TensorSpec(t.name, t.shape, t.dtype) for t in outputs]

    def bytes_moved(self, w: Workload) -> int:
        """Compulsory traffic: every input read once, every output written once."""
        total = 0
        for t in self.tensor_specs(w):
            total += int(np.prod(t.shape)) * dtype_bytes(t.dtype)
        return total

    def describe(self) -> dict:
        return {"name": self.name, "doc": self.doc, "params": [p.describe() for p in self.params]}
