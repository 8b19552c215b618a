"""Launch a kernel its template rendered (ir.opaque.OpaqueKernel) through pycuda: its parameters packed into one
buffer at the offsets the cubin names, tensor maps encoded from the bound device addresses, on the caller's stream.

Why one packed buffer at the cubin's offsets: a `const __grid_constant__` CUtensorMap is 64-byte aligned at its
address in constant bank 0, where sm_90's parameter space starts at 0x210, so the first map sits at offset 0x30
and natural packing from 0 puts every parameter in the wrong place (runtime/tensor_map.py, cubin_params.py).

Encoding a map is a driver call of a few microseconds: the packed buffer is kept per tuple of bound addresses, so a
timing loop that launches on the same allocations packs once.
"""
from __future__ import annotations

from compiler_core.errors import BuildError
from compiler_core.ir.opaque import OpaqueKernel, TensorMapParam
from compiler_core.ir.stmt import Buffer
from compiler_core.runtime import cubin_params, tensor_map

MAX_BOUND = 16  # address tuples whose packed buffers are kept (an agent binds a few input sets per workload)


class OpaqueLaunch:
    """One loaded OpaqueKernel: call it with {Buffer: device address} (ints, or pycuda allocations) and a stream."""

    def __init__(self, fn, kernel: OpaqueKernel, cubin: bytes, device_sm_count) -> None:
        self.fn, self.kernel = fn, kernel
        try:
            params = cubin_params.kernel_params(cubin, kernel.name)
            self.offsets = tensor_map.check_param_layout(kernel.param_kinds, params)
            self.specs = {p: tensor_map.spec_of(p) for p in kernel.tensor_maps}
        except tensor_map.TensorMapError as exc:
            raise BuildError(f"{kernel.name}: {exc}") from None
        self.size = cubin_params.param_space_bytes(params)
        fn.prepare(tensor_map.param_buffer_format(self.size))
        # a persistent grid needs the SM count: the target's, or read off the device when the target left it out
        sms = kernel.sm_count or (device_sm_count() if kernel.persistent else 0)
        self.grid, self.block = kernel.grid_for(sms), tuple(kernel.block)
        self._packed: dict[tuple, bytes] = {}

    def pack(self, args: dict) -> bytes:
        """The parameter buffer for the bound addresses."""
        values = []
        for p in self.kernel.params:
            if isinstance(p, Buffer):
                values.append(int(args[p]))
            elif isinstance(p, TensorMapParam):
                values.append(tensor_map.encode(self.specs[p], int(args[p.buffer])))
            else:
                values.append(p.value)
        return tensor_map.pack_params(self.kernel.param_kinds, values, self.offsets, self.size)

    def __call__(self, args: dict, stream=None) -> None:
        key = tuple(int(args[b]) for b in self.kernel.bound_buffers)
        buf = self._packed.get(key)
        if buf is None:
            if len(self._packed) >= MAX_BOUND:
                self._packed.pop(next(iter(self._packed)))
            buf = self._packed[key] = self.pack(args)
        self.fn.prepared_async_call(self.grid, self.block, stream, buf,
                                    shared_size=self.kernel.dynamic_shared_bytes)
