"""build(workload, config, target) -> Kernel: lower, generate source, compile, and make it callable."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from compiler_core.codegen import generate_source
from compiler_core.errors import BuildError
from compiler_core.ir.stmt import Module
from compiler_core.lower import lower
from compiler_core.ops import get_op
from compiler_core.target import Target, host_isas, host_runs
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

    @property
    def launch(self) -> list[dict]:
        return [{"name": k.name, "grid": list(k.grid), "block": list(k.block), "shared_bytes": k.shared_bytes}
                for k in self.module.kernels]

    @property
    def specs(self) -> list:
        """The op's tensors (inputs then outputs) with their logical shapes and dtypes."""
        if self._specs is None:
            self._specs = get_op(self.workload.op).tensor_specs(self.workload)
        return self._specs

    def _check(self, arrays) -> list[np.ndarray]:
        specs = self.specs
        if len(arrays) != len(specs):
            names = ", ".join(b.name for b in specs)
            raise ValueError(f"{self.workload.op} kernel takes {len(specs)} arrays ({names}), got {len(arrays)}")
        out = []
        for a, b in zip(arrays, specs, strict=True):
            if not isinstance(a, np.ndarray) or a.shape != b.shape or a.dtype != np.dtype(b.dtype):
                got = f"{getattr(a, 'shape', '?')} {getattr(a, 'dtype', type(a).__name__)}"
                raise ValueError(f"{b.name}: expected {b.shape} {b.dtype}, got {got}")
            if not a.flags.c_contiguous:
                raise ValueError(f"{b.name}: array must be C-contiguous")
            out.append(a)
        return out

    def bind(self, *arrays: np.ndarray):
        """Validates the arrays once and returns a zero-argument callable that runs the kernel on them (C only):
        what timing loops use, so per-call checks stay out of the measurement."""
        arrays = self._check(arrays)
        if self.target.kind != "c":
            raise ValueError("bind() is for C kernels; CUDA kernels are timed through launch_device")
        call, ptrs = self._impl.call, [a.ctypes.data for a in arrays]
        return lambda arrays=arrays: call(ptrs)  # the default keeps the arrays alive as long as the closure

    def __call__(self, *arrays: np.ndarray) -> None:
        arrays = self._check(arrays)
        if self.target.kind == "c":
            self._impl.call([a.ctypes.data for a in arrays])
            return
        self._call_cuda(arrays)

    def _call_cuda(self, arrays: list[np.ndarray]) -> None:
        from compiler_core.runtime.cuda_runtime import driver

        drv = driver()

        pointers, allocations = {}, []
        for a, b in zip(arrays, self.module.args, strict=True):
            dev = drv.mem_alloc(max(a.nbytes, 1))
            drv.memcpy_htod(dev, a)
            pointers[b] = dev
            allocations.append(dev)
        for w in self.module.workspaces:
            dev = drv.mem_alloc(max(w.nbytes, 1))
            drv.memset_d8(dev, 0, w.nbytes)
            pointers[w] = dev
            allocations.append(dev)
        self._impl.launch(pointers)
        drv.Context.synchronize()
        for a, b in zip(arrays[self.module.num_inputs:], self.module.args[self.module.num_inputs:], strict=True):
            drv.memcpy_dtoh(a, pointers[b])
        for dev in allocations:
            dev.free()

    def launch_device(self, args: list, workspaces: list, stream=None) -> None:
        """CUDA only: launch on device addresses (args in op order, then the module's workspaces).

        Workspaces are zeroed first, as every run's contract says, so their memset is part of the timed cost.
        """
        from compiler_core.runtime.cuda_runtime import driver

        drv = driver()
        for w, ptr in zip(self.module.workspaces, workspaces, strict=True):
            drv.memset_d8_async(int(ptr), 0, w.nbytes, stream) if stream else drv.memset_d8(int(ptr), 0, w.nbytes)
        pointers = dict(zip(self.module.args, args, strict=True))
        pointers.update(zip(self.module.workspaces, workspaces, strict=True))
        self._impl.launch(pointers, stream)

    def run(self, *inputs: np.ndarray) -> list[np.ndarray]:
        """Allocates outputs, runs, returns them."""
        outs = [np.zeros(s.shape, dtype=s.dtype) for s in self.specs[len(inputs):]]
        self(*inputs, *outs)
        return outs


def build_module(workload: Workload, module: Module, target: Target, config: dict, cache_dir=None,
                 cubin: bytes | None = None) -> Kernel:
    source = generate_source(module, target)
    kernel = Kernel(workload, config, target, module, source)
    if target.kind == "c":
        from compiler_core.runtime.c_runtime import CLibrary, compile_shared_library

        if not host_runs(target):
            raise BuildError(f"{target.arch} code does not run on this host (it runs {', '.join(host_isas())}): "
                             "generate() and compile_shared_library() still work for it")
        kernel._impl = CLibrary(compile_shared_library(source, cache_dir, march=target.march_flags),
                                len(module.args))
    else:
        from compiler_core.runtime.cuda_runtime import CudaModule

        kernel._impl = CudaModule(source, list(module.kernels), cubin=cubin)
    return kernel


def build(workload: Workload, config: dict, target: Target, template: str = "tuned", cache_dir=None) -> Kernel:
    module = lower(workload, config, target, template)
    return build_module(workload, module, target, config, cache_dir)


def generate(workload: Workload, config: dict, target: Target, template: str = "tuned") -> str:
    """Source only (no compiler, no device): what compile checks and golden files use."""
    return generate_source(lower(workload, config, target, template), target)
