"""Where a compiled kernel reads each of its parameters: the EIATTR_KPARAM_INFO records of a cubin's
`.nv.info.<kernel>` section (what `cuobjdump -elf` prints as "Ordinal / Offset / Size"), read with a small ELF64
reader so that no CUDA tool is needed at launch time.

Why it matters: a launch that passes its arguments as one packed buffer (CU_LAUNCH_PARAM_BUFFER_POINTER, which is
what pycuda's `prepared_call` and `__call__` do) hands the driver an image of the parameter space, copied as is.
The kernel reads parameter i at the offset its KPARAM_INFO names. On sm_90 the parameter space starts at constant
bank offset 0x210, and a parameter's alignment is honoured at its absolute bank address, not at its offset from the
start of the parameters: a 64-byte aligned CUtensorMap as the first parameter sits at offset 0x30 (bank 0x240), not
at 0. Natural packing from 0 (Python's struct, pycuda) puts it at 0, and the kernel then reads a tensor map made of
the second half of one map and the first half of the next (TMA: "illegal instruction"), and scalars from past the
end of the buffer (stale bytes). The launcher therefore packs the buffer at the offsets read here.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from compiler_core.errors import BuildError

EIATTR_KPARAM_INFO = 0x17
EIFMT_SVAL = 4  # a 2-byte length and that many bytes follow; the other formats take 4 bytes in all


@dataclass(frozen=True)
class KernelParam:
    ordinal: int  # the parameter's position in the signature
    offset: int  # bytes from the start of the parameter space (the launch buffer)
    size: int


def _sections(cubin: bytes) -> dict:
    """name -> bytes of each section of an ELF64 little-endian file."""
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2 or cubin[5] != 1:
        raise BuildError("not an ELF64 little-endian cubin")
    shoff = struct.unpack_from("<Q", cubin, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]
    out = {}
    for name_off, _type, _flags, _addr, offset, size, *_ in headers:
        start = names_at + name_off
        name = cubin[start:cubin.index(b"\0", start)].decode()
        out[name] = cubin[offset:offset + size]
    return out


def kernel_params(cubin: bytes, kernel: str) -> list[KernelParam]:
    """The parameters of entry `kernel` in signature order; BuildError where the cubin has no such kernel."""
    info = _sections(cubin).get(f".nv.info.{kernel}")
    if info is None:
        raise BuildError(f"the cubin has no .nv.info section for kernel {kernel!r}")
    params, i = [], 0
    while i + 2 <= len(info):
        fmt, attr = info[i], info[i + 1]
        if fmt == EIFMT_SVAL:
            (length,) = struct.unpack_from("<H", info, i + 2)
            value = info[i + 4:i + 4 + length]
            i += 4 + length
            if attr == EIATTR_KPARAM_INFO:
                _index, ordinal, offset, flags = struct.unpack_from("<IHHI", value)
                params.append(KernelParam(ordinal, offset, (flags >> 18) & 0x3FFF))
        else:
            i += 4
    return sorted(params, key=lambda p: p.ordinal)


def param_space_bytes(params: list[KernelParam]) -> int:
    """Bytes of the parameter space the kernel reads (the launch buffer's size)."""
    return max((p.offset + p.size for p in params), default=0)
