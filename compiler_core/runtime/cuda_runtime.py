"""Load nvcc-compiled CUDA (cubin) through pycuda on the device's primary context and launch kernels in order."""
from __future__ import annotations

from compiler_core.errors import BuildError

_CONTEXT = None


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


def device_arch(device: int = 0) -> str:
    drv = driver(device)
    major, minor = drv.Context.get_device().compute_capability()
    return f"sm_{major}{minor}"


class CudaModule:
    """A compiled CUDA module; `launch(pointers)` runs each kernel with its own launch dims."""

    def __init__(self, source: str, kernels: list, arch: str | None = None, cubin: bytes | None = None) -> None:
        drv = driver()
        if cubin is None:
            from compiler_core.runtime.nvcc_check import nvcc_compile

            cubin = nvcc_compile(source, arch or device_arch())
        try:
            self._mod = drv.module_from_buffer(cubin)
        except Exception as exc:  # noqa: BLE001
            raise BuildError(f"CUDA module load failed: {exc}") from None
        self._launches = [(self._mod.get_function(k.name), k.grid, k.block, k.params) for k in kernels]

    def launch(self, pointers: dict, stream=None) -> None:
        """`pointers` maps each Buffer (args and workspaces) to a device allocation or a raw int address."""
        import numpy as np

        args = {b: np.uintp(p) if isinstance(p, int) else p for b, p in pointers.items()}
        for fn, grid, block, params in self._launches:
            fn(*(args[b] for b in params), grid=grid, block=block, stream=stream)
