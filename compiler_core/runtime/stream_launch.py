"""Launch a compiled CUDA module on any caller's stream: the driver API through ctypes on libcuda.so.1.

Why not pycuda's launch: pycuda launches only on its own `Stream` objects, and one cannot wrap a stream that
someone else created, while PyTorch, CuPy and JAX hand out raw `CUstream` handles (PyTorch's current stream is
what its users expect a kernel to run on, and what CUDA graph capture records). So the module's cubin is loaded
once more, here, into the device's primary context (the one PyTorch, CuPy and pycuda all share), and each kernel
is launched with `cuLaunchKernel` on a handle. Kernels a template rendered itself (ir.opaque) keep their packed
parameter buffer and tensor maps: runtime/opaque_launch.OpaqueLaunch is reused with a driver-level function.

`StreamModule.launch(addresses, stream)` takes the module's args (op order) then its workspaces as device
addresses; zeroing the workspaces is the caller's (on the same stream) where `Module.zeroed_once` says so:
before every launch unless the module overwrites them, and once where they are allocated for those it keeps zero.
"""
from __future__ import annotations

import ctypes
import threading

from compiler_core.errors import BuildError
from compiler_core.ir.opaque import OpaqueKernel
from compiler_core.runtime import tensor_map

FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
DEVICE_ATTRIBUTE_SM_COUNT = 16  # CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
LAUNCH_PARAM_END, LAUNCH_PARAM_BUFFER_POINTER, LAUNCH_PARAM_BUFFER_SIZE = 0, 1, 2
STATIC_SHARED_LIMIT = 48 * 1024

_LIB = None
_LIB_LOCK = threading.Lock()


def libcuda() -> ctypes.CDLL:
    """libcuda.so.1, initialised, with the signatures this module calls."""
    global _LIB
    with _LIB_LOCK:
        if _LIB is None:
            lib = tensor_map.load_libcuda()
            vp, u32 = ctypes.c_void_p, ctypes.c_uint
            lib.cuLaunchKernel.argtypes = [vp, u32, u32, u32, u32, u32, u32, u32, vp, vp, vp]
            lib.cuModuleLoadData.argtypes = [ctypes.POINTER(vp), ctypes.c_char_p]
            lib.cuModuleGetFunction.argtypes = [ctypes.POINTER(vp), vp, ctypes.c_char_p]
            lib.cuFuncSetAttribute.argtypes = [vp, ctypes.c_int, ctypes.c_int]
            lib.cuCtxGetCurrent.argtypes = [ctypes.POINTER(vp)]
            lib.cuCtxPushCurrent_v2.argtypes = [vp]
            lib.cuCtxPopCurrent_v2.argtypes = [ctypes.POINTER(vp)]
            lib.cuDevicePrimaryCtxRetain.argtypes = [ctypes.POINTER(vp), ctypes.c_int]
            lib.cuDeviceGet.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int]
            lib.cuDeviceGetAttribute.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int]
            _check(lib, lib.cuInit(0), "cuInit")
            _LIB = lib
    return _LIB


def _check(lib, code: int, what: str) -> None:
    if code != 0:
        raise BuildError(f"{what} failed: {tensor_map._error_text(lib, code)} (CUresult {code})")


class _DriverFunction:
    """A CUfunction with the two methods OpaqueLaunch calls on a pycuda Function."""

    def __init__(self, lib, handle: ctypes.c_void_p) -> None:
        self.lib, self.handle = lib, handle

    def prepare(self, _format: str) -> None:
        pass

    def prepared_async_call(self, grid, block, stream, buf: bytes, shared_size: int = 0) -> None:
        size = ctypes.c_size_t(len(buf))
        data = ctypes.create_string_buffer(buf, len(buf))
        extra = (ctypes.c_void_p * 5)(LAUNCH_PARAM_BUFFER_POINTER, ctypes.addressof(data),
                                      LAUNCH_PARAM_BUFFER_SIZE, ctypes.addressof(size), LAUNCH_PARAM_END)
        _check(self.lib, self.lib.cuLaunchKernel(self.handle, *_dims(grid), *_dims(block), shared_size,
                                                 stream or None, None, extra), "cuLaunchKernel")


def _dims(d) -> tuple:
    return (*(int(x) for x in d), 1, 1)[:3]


class _PrimLaunch:
    """One PrimFunc: its buffers as pointer parameters, each read from the launch's address list by position."""

    def __init__(self, lib, fn: ctypes.c_void_p, kernel, slots: list[int]) -> None:
        self.lib, self.fn, self.slots = lib, fn, slots
        self.grid, self.block, self.shared = _dims(kernel.grid), _dims(kernel.block), kernel.dynamic_shared_bytes
        self.values = (ctypes.c_uint64 * max(1, len(slots)))()
        base, step = ctypes.addressof(self.values), ctypes.sizeof(ctypes.c_uint64)
        self.params = (ctypes.c_void_p * max(1, len(slots)))(*(base + i * step for i in range(len(slots))))

    def __call__(self, addresses: list[int], stream) -> None:
        for i, slot in enumerate(self.slots):  # cuLaunchKernel copies the values: reuse after it is safe
            self.values[i] = addresses[slot]
        _check(self.lib, self.lib.cuLaunchKernel(self.fn, *self.grid, *self.block, self.shared, stream or None,
                                                 self.params, None), "cuLaunchKernel")


class StreamModule:
    """A lowered module's cubin loaded into device `device`'s primary context, launchable on raw stream handles."""

    def __init__(self, module, cubin: bytes, device: int = 0) -> None:
        self.lib = lib = libcuda()
        self.module, self.device, self._cubin = module, device, cubin
        dev = ctypes.c_int()
        _check(lib, lib.cuDeviceGet(ctypes.byref(dev), device), f"cuDeviceGet({device})")
        self.ctx = ctypes.c_void_p()
        _check(lib, lib.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), dev), "cuDevicePrimaryCtxRetain")
        self._dev, self._lock = dev, threading.Lock()
        buffers = [*module.args, *module.workspaces]
        with self._current():
            mod = ctypes.c_void_p()
            _check(lib, lib.cuModuleLoadData(ctypes.byref(mod), cubin), "cuModuleLoadData")
            self._mod = mod
            self._launches = [self._load(k, buffers) for k in module.kernels]

    def _function(self, kernel) -> ctypes.c_void_p:
        fn = ctypes.c_void_p()
        _check(self.lib, self.lib.cuModuleGetFunction(ctypes.byref(fn), self._mod, kernel.name.encode()),
               f"cuModuleGetFunction({kernel.name})")
        if kernel.dynamic_shared_bytes > STATIC_SHARED_LIMIT:  # beyond 48 KiB a kernel must opt in
            _check(self.lib, self.lib.cuFuncSetAttribute(fn, FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED,
                                                         kernel.dynamic_shared_bytes),
                   f"{kernel.name}: {kernel.dynamic_shared_bytes} B of dynamic shared memory")
        return fn

    def _load(self, kernel, buffers: list):
        fn = self._function(kernel)
        if isinstance(kernel, OpaqueKernel):
            from compiler_core.runtime.opaque_launch import OpaqueLaunch

            launch = OpaqueLaunch(_DriverFunction(self.lib, fn), kernel, self._cubin, self.sm_count)
            slot = {id(b): i for i, b in enumerate(buffers)}
            return lambda addresses, stream: launch({b: addresses[slot[id(b)]] for b in buffers}, stream)
        index = {id(b): i for i, b in enumerate(buffers)}
        try:
            slots = [index[id(p)] for p in kernel.params]
        except KeyError:
            raise BuildError(f"{kernel.name}: a parameter is neither an argument nor a workspace of "
                             f"{self.module.name}") from None
        return _PrimLaunch(self.lib, fn, kernel, slots)

    def sm_count(self) -> int:
        value = ctypes.c_int()
        _check(self.lib, self.lib.cuDeviceGetAttribute(ctypes.byref(value), DEVICE_ATTRIBUTE_SM_COUNT, self._dev),
               "cuDeviceGetAttribute")
        return value.value

    def _current(self):
        """The primary context made current for a block (pushed only when another one is)."""
        return _ContextScope(self.lib, self.ctx)

    def launch(self, addresses: list[int], stream: int | None = None) -> None:
        """`addresses`: the module's args then its workspaces; `stream`: a CUstream handle (0/None: legacy)."""
        expected = len(self.module.args) + len(self.module.workspaces)
        if len(addresses) != expected:
            raise ValueError(f"{self.module.name} takes {expected} addresses (args, then workspaces), "
                             f"got {len(addresses)}")
        with self._lock, self._current():
            for launch in self._launches:
                launch(addresses, stream)


class _ContextScope:
    def __init__(self, lib, ctx: ctypes.c_void_p) -> None:
        self.lib, self.ctx, self.pushed = lib, ctx, False

    def __enter__(self):
        current = ctypes.c_void_p()
        _check(self.lib, self.lib.cuCtxGetCurrent(ctypes.byref(current)), "cuCtxGetCurrent")
        if current.value != self.ctx.value:
            _check(self.lib, self.lib.cuCtxPushCurrent_v2(self.ctx), "cuCtxPushCurrent")
            self.pushed = True
        return self

    def __exit__(self, *exc) -> None:
        if self.pushed:
            _check(self.lib, self.lib.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p())), "cuCtxPopCurrent")

