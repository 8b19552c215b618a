"""Compile generated CUDA through pycuda and launch its kernels in order."""
from __future__ import annotations

from compiler_core.errors import BuildError


def cuda_available() -> bool:
    try:
        import pycuda.driver as drv

        drv.init()
        return drv.Device.count() > 0
    except Exception:  # noqa: BLE001 - any failure (no module, no driver, no device) means "unavailable"
        return False


def _context():
    try:
        import pycuda.autoinit  # noqa: F401 - creates the primary context once per process
        import pycuda.driver as drv
    except ImportError:
        raise BuildError("CUDA build needs pycuda: pip install 'tunefarm[gpu]'") from None
    except Exception as exc:  # noqa: BLE001 - driver errors surface as BuildError with their text
        raise BuildError(f"no usable CUDA device: {exc}") from None
    return drv


class CudaModule:
    """A compiled CUDA module; `launch(ptrs)` runs each kernel with its own launch dims on device pointers."""

    def __init__(self, source: str, kernels: list, arch: str | None = None) -> None:
        drv = _context()
        from pycuda.compiler import SourceModule

        if arch is None:
            major, minor = drv.Context.get_device().compute_capability()
            arch = f"sm_{major}{minor}"
        try:
            self._mod = SourceModule(source, no_extern_c=True, arch=arch, options=["-O3", "-std=c++17"])
        except Exception as exc:  # noqa: BLE001 - nvcc errors come back as pycuda CompileError
            raise BuildError(f"CUDA compile failed: {exc}") from None
        self._launches = [(self._mod.get_function(k.name), k.grid, k.block, k.params) for k in kernels]

    def launch(self, pointers: dict) -> None:
        """`pointers` maps each Buffer (args and workspaces) to a device pointer."""
        for fn, grid, block, params in self._launches:
            fn(*(pointers[b] for b in params), grid=grid, block=block)
