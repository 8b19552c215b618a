"""TorchKernel: a compiled compiler_core Kernel run on torch tensors in place, with checks that name what is wrong.

C kernels run on CPU tensors through their data pointers (the shared library's `tf_entry` takes pointers and
allocates its own workspaces). CUDA kernels run on CUDA tensors on the current stream of the tensors' device,
launched through compiler_core.runtime.stream_launch (the driver API on the raw stream handle: no copies, no
synchronisation, capturable); their workspaces are torch allocations on the same device and stream, zeroed there
unless the module overwrites them.
"""
from __future__ import annotations

import math
import threading

import torch

import compiler_core as cc

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
DEVICE_TYPES = {"c": "cpu", "cuda": "cuda"}  # Target.kind -> the torch device type its kernels run on


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype of a compiler_core storage dtype name."""
    try:
        return DTYPES[name]
    except KeyError:
        raise ValueError(f"no torch dtype for {name!r}: expected one of {', '.join(DTYPES)}") from None


def _describe(t) -> str:
    if not isinstance(t, torch.Tensor):
        return type(t).__name__
    return f"{tuple(t.shape)} {str(t.dtype).removeprefix('torch.')} on {t.device}"


class TorchKernel:
    """Checks torch tensors against a kernel's tensor specs and launches the kernel on them.

    Checks run on every call, so they have a fast path (one pass of plain comparisons against precomputed specs)
    and, only when it fails, a diagnosis that names the first wrong tensor and what was expected of it."""

    def __init__(self, kernel: cc.Kernel) -> None:
        if kernel.target.kind not in DEVICE_TYPES:
            raise ValueError(f"no torch device for {kernel.target.kind!r} kernels")
        self.kernel, self.module = kernel, kernel.module
        n = self.module.num_inputs
        self.input_specs, self.output_specs = list(kernel.specs[:n]), list(kernel.specs[n:])
        self.device_type = DEVICE_TYPES[kernel.target.kind]
        self.dtypes = [torch_dtype(s.dtype) for s in kernel.specs]
        aligns = [b.align for b in self.module.args]
        # per tensor (inputs then outputs): (shape, dtype, alignment, bytes)
        self._expect = [(torch.Size(s.shape), d, a, math.prod(s.shape) * d.itemsize)
                        for s, d, a in zip(kernel.specs, self.dtypes, aligns, strict=True)]
        self._stream_modules: dict[int, object] = {}  # CUDA device index -> StreamModule
        self._lock = threading.Lock()

    @property
    def key(self) -> str:
        return self.kernel.workload.key

    def _fail(self, message: str) -> None:
        raise ValueError(f"{self.key} ({self.kernel.target.arch} kernel): {message}")

    def _fits(self, tensors, expect, device, memory: bool) -> bool:
        """The fast path: every tensor as expected, on `device`, contiguous (and aligned, with `memory`)."""
        if len(tensors) != len(expect):
            return False
        try:
            for t, (shape, dtype, align, _) in zip(tensors, expect, strict=True):
                if (t.shape != shape or t.dtype != dtype or t.device != device or not t.is_contiguous()
                        or (memory and t.data_ptr() % align)):
                    return False
        except AttributeError:  # not a tensor
            return False
        return True

    def check_inputs(self, inputs, memory: bool = True) -> torch.device:
        """Raises ValueError naming the first input of the wrong kind, shape, dtype, device or layout; returns the
        inputs' device. `memory=False` (fake tensors at trace time) leaves out the data pointer checks."""
        expect = self._expect[:len(self.input_specs)]
        device = getattr(inputs[0], "device", None) if inputs else None
        if device is not None and (device.type == self.device_type or (not memory and device.type == "meta")) \
                and self._fits(inputs, expect, device, memory):
            return device
        return self._diagnose(inputs, self.input_specs, expect, "input", None, memory)

    def check_outputs(self, outputs, device: torch.device, inputs=(), memory: bool = True) -> None:
        """As check_inputs, on `device`; with `memory`, no output may overlap an input or another output."""
        expect = self._expect[len(self.input_specs):]
        if not self._fits(outputs, expect, device, memory):
            self._diagnose(outputs, self.output_specs, expect, "output", device, memory)
        if memory:
            self._check_overlaps(inputs, outputs)

    def _diagnose(self, tensors, specs, expect, role: str, device, memory: bool) -> torch.device:
        if len(tensors) != len(specs):
            self._fail(f"takes {len(specs)} {role} tensors ({', '.join(s.name for s in specs)}), got {len(tensors)}")
        for t, spec, (shape, dtype, align, _) in zip(tensors, specs, expect, strict=True):
            want = f"{spec.shape} {spec.dtype} on {self.device_type}"
            if not isinstance(t, torch.Tensor):
                self._fail(f"{role} {spec.name}: expected a torch.Tensor {want}, got {_describe(t)}")
            on_device = t.device.type == self.device_type or (not memory and t.device.type == "meta")
            if t.shape != shape or t.dtype != dtype or not on_device:
                self._fail(f"{role} {spec.name}: expected {want}, got {_describe(t)}")
            if device is None:
                device = t.device
            elif t.device != device:
                self._fail(f"{role} {spec.name} is on {t.device}, the other tensors on {device}")
            if not t.is_contiguous():
                self._fail(f"{role} {spec.name} must be contiguous (row-major), got strides {t.stride()}: "
                           "pass .contiguous()")
            if memory and t.data_ptr() % align:
                self._fail(f"{role} {spec.name} starts at an address that is not {align}-byte aligned (a view at "
                           "an offset?): the kernel's vector accesses need it; pass .clone()")
        return device

    def _check_overlaps(self, inputs, outputs) -> None:
        tensors = (*inputs, *outputs)
        spans = [(t.data_ptr(), t.data_ptr() + e[3]) for t, e in zip(tensors, self._expect, strict=True)]
        names = [s.name for s in (*self.input_specs, *self.output_specs)]
        for i in range(len(inputs), len(tensors)):
            for j in range(i):
                if spans[i][0] < spans[j][1] and spans[j][0] < spans[i][1]:
                    self._fail(f"output {names[i]} overlaps {names[j]}: outputs must not share memory with other "
                               "tensors")

    def empty_outputs(self, device: torch.device) -> list[torch.Tensor]:
        return [torch.empty(shape, dtype=dtype, device=device)
                for shape, dtype, _, _ in self._expect[len(self.input_specs):]]

    def launch(self, tensors, device: torch.device) -> None:
        """Runs the kernel on checked tensors (inputs then outputs), in place."""
        pointers = [t.data_ptr() for t in tensors]
        if device.type == "cpu":
            self.kernel.call_pointers(pointers)
            return
        index = device.index if device.index is not None else torch.cuda.current_device()
        module = self._stream_modules.get(index) or self._load(index)
        workspaces = [(torch.zeros if self.module.zeroed_once(w) else torch.empty)(
            max(w.nbytes, 1), dtype=torch.uint8, device=device) for w in self.module.workspaces]
        stream = torch.cuda.current_stream(device).cuda_stream
        module.launch(pointers + [w.data_ptr() for w in workspaces], stream)

    def _load(self, index: int):
        """The kernel's cubin loaded for CUDA device `index` (nvcc's cache holds the cubin the kernel was built
        from, so this compiles nothing when the kernel was built on this machine)."""
        from compiler_core.backends import backend
        from compiler_core.runtime.stream_launch import StreamModule

        with self._lock:
            if index not in self._stream_modules:
                cubin = getattr(self.kernel._impl, "cubin", None)
                if cubin is None:
                    cubin = backend(self.kernel.target.kind).compile(self.kernel.source, self.kernel.target)
                self._stream_modules[index] = StreamModule(self.module, cubin, index)
            return self._stream_modules[index]
