"""build(workload, config, target) -> Kernel: lower, generate source, compile, and make it callable."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from compiler_core.backends import backend
from compiler_core.codegen import generate_source
from compiler_core.dtypes import numpy_dtype
from compiler_core.ir.stmt import Module
from compiler_core.lower import lower
from compiler_core.ops import get_op
from compiler_core.target import Target
from compiler_core.workload import Workload


@dataclass
class Kernel:
    """A compiled kernel. Call it with input arrays then output arrays (numpy, or device pointers via `launch`)."""
    workload: Workload
    config: dict
    target: Target
    module: Module
    source: str
    _impl: object = field(default=None, repr=False)
    _specs: list | None = field(default=None, repr=False)
    _outputs: int | None = field(default=None, repr=False)

    @property
    def launch(self) -> list[dict]:
        return [{"name": k.name, "grid": list(k.grid), "block": list(k.block), "shared_bytes": k.shared_bytes,
                 "dynamic_shared_bytes": k.dynamic_shared_bytes} for k in self.module.kernels]

    @property
    def specs(self) -> list:
        """The op's tensors (inputs then outputs) with their logical shapes and dtypes."""
        if self._specs is None:
            self._specs = get_op(self.workload.op).tensor_specs(self.workload)
        return self._specs

    @property
    def outputs(self) -> int:
        """How many of `specs` (the last ones) are outputs."""
        if self._outputs is None:
            self._outputs = len(get_op(self.workload.op).output_specs(self.workload))
        return self._outputs

    def _check(self, arrays) -> list[np.ndarray]:
        specs = self.specs
        if len(arrays) != len(specs):
            names = ", ".join(b.name for b in specs)
            raise ValueError(f"{self.workload.op} kernel takes {len(specs)} arrays ({names}), got {len(arrays)}")
        out = []
        for a, b in zip(arrays, specs, strict=True):
            if not isinstance(a, np.ndarray) or a.shape != b.shape or a.dtype != numpy_dtype(b.dtype):
                got = f"{getattr(a, 'shape', '?')} {getattr(a, 'dtype', type(a).__name__)}"
                hint = " (numpy's: ml_dtypes.bfloat16)" if b.dtype == "bfloat16" else ""
                raise ValueError(f"{b.name}: expected {b.shape} {b.dtype}{hint}, got {got}")
            if not a.flags.c_contiguous:
                raise ValueError(f"{b.name}: array must be C-contiguous")
            out.append(a)
        for i in range(len(out) - self.outputs, len(out)):
            if not out[i].flags.writeable:  # a read-only mapping would fault; a buffer of bytes would be overwritten
                raise ValueError(f"{specs[i].name}: the output array is read-only: pass a writeable array")
            for j in range(i):
                # an output written while inputs are still read (or two outputs in one place) is a wrong result
                if np.may_share_memory(out[i], out[j]):
                    raise ValueError(f"output {specs[i].name} shares memory with {specs[j].name}: outputs must not "
                                     "overlap other arrays")
        return out

    def bind(self, *arrays: np.ndarray):
        """Validates the arrays once and returns a zero-argument callable that runs the kernel on them (C only):
        what timing loops use, so per-call checks stay out of the measurement."""
        arrays = self._check(arrays)
        if not hasattr(self._impl, "call"):
            raise ValueError(f"bind() is for kernels on host memory; {self.target.kind} kernels are timed through "
                             "launch_device")
        call, ptrs = self._impl.call, [a.ctypes.data for a in arrays]
        return lambda arrays=arrays: call(ptrs)  # the default keeps the arrays alive as long as the closure

    def __call__(self, *arrays: np.ndarray) -> None:
        self._impl.run_host(self._check(arrays))

    def call_pointers(self, pointers: list[int]) -> None:
        """C only: run on raw host addresses (args in op order, each C-contiguous, of its spec's shape and dtype),
        unchecked: what callers holding other frameworks' tensors use (tunefarm_client.torch checks first)."""
        if not hasattr(self._impl, "call"):
            raise ValueError(f"call_pointers() is for kernels on host memory; {self.target.kind} kernels launch "
                             "through launch_device")
        self._impl.call(pointers)

    def launch_device(self, args: list, workspaces: list, stream=None) -> None:
        """CUDA only: launch on device addresses (args in op order, then the module's workspaces).

        Workspaces are zeroed first, as every run's contract says, so their memset is part of the timed cost.
        """
        if not hasattr(self._impl, "launch_device"):
            raise ValueError(f"launch_device() is for kernels on device memory, not {self.target.kind} kernels")
        self._impl.launch_device(args, workspaces, stream)

    def run(self, *inputs: np.ndarray) -> list[np.ndarray]:
        """Takes every input (ValueError naming the missing ones: never zero-filled), allocates the outputs, runs,
        returns them."""
        n_inputs = len(get_op(self.workload.op).input_specs(self.workload))
        if len(inputs) != n_inputs:
            names = [s.name for s in self.specs[:n_inputs]]
            missing = f"; missing: {', '.join(names[len(inputs):])}" if len(inputs) < n_inputs else ""
            raise ValueError(f"{self.workload.op} run() takes its {n_inputs} inputs ({', '.join(names)}), got "
                             f"{len(inputs)}{missing} (outputs are allocated and returned)")
        outs = [np.zeros(s.shape, dtype=numpy_dtype(s.dtype)) for s in self.specs[n_inputs:]]
        self(*inputs, *outs)
        return outs


def build_module(workload: Workload, module: Module, target: Target, config: dict, cache_dir=None,
                 cubin: bytes | None = None) -> Kernel:
    """`cubin`: an artifact the target's backend compiled ahead (an agent's build pool), else compiled here."""
    source = generate_source(module, target)
    kernel = Kernel(workload, config, target, module, source)
    kernel._impl = backend(target.kind).load(module, source, target, cubin, cache_dir)
    return kernel


def build(workload: Workload, config: dict, target: Target, template: str = "tuned", cache_dir=None) -> Kernel:
    module = lower(workload, config, target, template)
    return build_module(workload, module, target, config, cache_dir)


def generate(workload: Workload, config: dict, target: Target, template: str = "tuned") -> str:
    """Source only (no compiler, no device): what compile checks and golden files use."""
    return generate_source(lower(workload, config, target, template), target)
