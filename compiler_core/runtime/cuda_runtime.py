"""Load nvcc-compiled CUDA (cubin) through pycuda on the device's primary context and launch kernels in order
(kernels a template rendered itself through runtime/opaque_launch.py)."""
from __future__ import annotations

import dataclasses

from compiler_core.errors import BuildError
from compiler_core.ir.opaque import OpaqueKernel
from compiler_core.target import Target, cuda_target

_CONTEXT = None
STATIC_SHARED_LIMIT = 48 * 1024  # a block gets more shared memory only once its kernel raises its dynamic limit


def cuda_available() -> bool:
    try:
        import pycuda.driver as drv

        drv.init()
        return drv.Device.count() > 0
    except Exception:  # noqa: BLE001 - any failure (no module, no driver, no device) means "unavailable"
        return False


def driver(device: int = 0):
    """pycuda.driver with the device's primary context current (shared with PyTorch/CuPy in the same process)."""
    global _CONTEXT
    try:
        import pycuda.driver as drv
    except ImportError:
        raise BuildError("CUDA builds need pycuda: pip install 'tunefarm[gpu]'") from None
    if _CONTEXT is None:
        try:
            drv.init()
            _CONTEXT = drv.Device(device).retain_primary_context()
            _CONTEXT.push()
        except Exception as exc:  # noqa: BLE001 - driver errors surface as BuildError with their text
            raise BuildError(f"no usable CUDA device: {exc}") from None
        import atexit

        atexit.register(_CONTEXT.pop)
    return drv


ARCH_SPECIFIC = {90: "sm_90a"}  # compute capabilities whose arch-specific target (wgmma, setmaxnreg) we build for


def device_arch(device: int = 0) -> str:
    """The arch code for this device is built for: 'sm_90a' on Hopper (its own instructions), else 'sm_XY'."""
    return device_target(device).arch


def device_target(device: int = 0) -> Target:
    """The device's Target, with the limits read off it (opt-in shared memory, SMs, L2, register file); reads
    attributes only (no context is created)."""
    try:
        import pycuda.driver as drv

        drv.init()
        dev = drv.Device(device)
    except ImportError:
        raise BuildError("CUDA targets read off a device need pycuda: pip install 'tunefarm[gpu]'") from None
    except Exception as exc:  # noqa: BLE001 - driver errors surface as BuildError with their text
        raise BuildError(f"no usable CUDA device {device}: {exc}") from None
    major, minor = dev.compute_capability()
    attr = drv.device_attribute
    target = cuda_target(ARCH_SPECIFIC.get(10 * major + minor, f"sm_{major}{minor}"),
                         sm_count=dev.get_attribute(attr.MULTIPROCESSOR_COUNT),
                         l2_bytes=dev.get_attribute(attr.L2_CACHE_SIZE),
                         max_dynamic_shared_bytes=dev.get_attribute(attr.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN))
    return dataclasses.replace(
        target, warp_size=dev.get_attribute(attr.WARP_SIZE),
        max_threads_per_block=dev.get_attribute(attr.MAX_THREADS_PER_BLOCK),
        register_file=dev.get_attribute(attr.MAX_REGISTERS_PER_MULTIPROCESSOR),
        max_shared_bytes=dev.get_attribute(attr.MAX_SHARED_MEMORY_PER_BLOCK))


class CudaModule:
    """A compiled CUDA module; `launch(pointers)` runs each kernel with its own launch dims. With the lowered
    `module` it also runs on host arrays (`run_host`) and on device addresses with zeroed workspaces."""

    def __init__(self, source: str, kernels: list, arch: str | None = None, cubin: bytes | None = None,
                 module=None) -> None:
        drv = driver()
        self.module = module
        if cubin is None:
            from compiler_core.runtime.nvcc_check import nvcc_compile

            cubin = nvcc_compile(source, arch or device_arch())
        try:
            self._mod = drv.module_from_buffer(cubin)
        except Exception as exc:  # noqa: BLE001
            raise BuildError(f"CUDA module load failed: {exc}") from None
        self._launches = [self._opaque(drv, k, cubin) if isinstance(k, OpaqueKernel) else self._prim(drv, k)
                          for k in kernels]

    def _prim(self, drv, kernel):
        """A PrimFunc's launch: its buffers as pointer arguments, in order."""
        fn = self._function(drv, kernel)
        grid, block, params, dynamic = kernel.grid, kernel.block, kernel.params, kernel.dynamic_shared_bytes

        def launch(args: dict, stream) -> None:
            fn(*(args[b] for b in params), grid=grid, block=block, shared=dynamic, stream=stream)

        return launch

    def _opaque(self, drv, kernel, cubin: bytes):
        from compiler_core.runtime.opaque_launch import OpaqueLaunch

        def device_sm_count() -> int:
            return drv.Context.get_device().get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT)

        return OpaqueLaunch(self._function(drv, kernel), kernel, cubin, device_sm_count)

    def _function(self, drv, kernel):
        fn = self._mod.get_function(kernel.name)
        if kernel.dynamic_shared_bytes > STATIC_SHARED_LIMIT:  # beyond 48 KiB a kernel must opt in
            try:
                fn.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, kernel.dynamic_shared_bytes)
            except Exception as exc:  # noqa: BLE001 - the driver's refusal names the limit
                raise BuildError(f"{kernel.name}: {kernel.dynamic_shared_bytes} B of dynamic shared memory "
                                 f"refused: {exc}") from None
        return fn

    def launch(self, pointers: dict, stream=None) -> None:
        """`pointers` maps each Buffer (args and workspaces) to a device allocation or a raw int address."""
        import numpy as np

        args = {b: np.uintp(p) if isinstance(p, int) else p for b, p in pointers.items()}
        for launch in self._launches:
            launch(args, stream)

    def launch_device(self, args: list, workspaces: list, stream=None) -> None:
        """Args in op order, then the module's workspaces (device addresses); workspaces are zeroed first unless the
        module overwrites them or keeps them zero (Module.zeroed_per_run; a kept-zero one is the caller's to zero
        where it allocates it)."""
        drv = driver()
        zeroed = set(self.module.zeroed_per_run())
        for w, ptr in zip(self.module.workspaces, workspaces, strict=True):
            if w not in zeroed:
                continue
            drv.memset_d8_async(int(ptr), 0, w.nbytes, stream) if stream else drv.memset_d8(int(ptr), 0, w.nbytes)
        pointers = dict(zip(self.module.args, args, strict=True))
        pointers.update(zip(self.module.workspaces, workspaces, strict=True))
        self.launch(pointers, stream)

    def run_host(self, arrays: list) -> None:
        """Copies host arrays in, runs, copies the outputs back (a convenience: timing uses launch_device)."""
        import numpy as np

        from compiler_core.dtypes import raw_bytes

        drv = driver()
        pointers, allocations = {}, []
        try:
            for a, b in zip(arrays, self.module.args, strict=True):
                pointers[b] = dev = drv.mem_alloc(max(a.nbytes, 1))
                allocations.append(dev)
                drv.memcpy_htod(dev, raw_bytes(np.ascontiguousarray(a)))  # bytes: bfloat16 has no buffer format
            for w in self.module.workspaces:
                pointers[w] = dev = drv.mem_alloc(max(w.nbytes, 1))
                allocations.append(dev)
                drv.memset_d8(dev, 0, w.nbytes)
            self.launch(pointers)
            drv.Context.synchronize()
            outputs = self.module.args[self.module.num_inputs:]
            for a, b in zip(arrays[self.module.num_inputs:], outputs, strict=True):
                drv.memcpy_dtoh(raw_bytes(a), pointers[b])
        finally:
            for dev in allocations:
                dev.free()
