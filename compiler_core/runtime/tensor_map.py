"""Host-side TMA tensor maps: `cuTensorMapEncodeTiled` and `cuTensorMapEncodeIm2col` through ctypes on libcuda.so.1,
and how a map reaches a kernel (by value, as a `const __grid_constant__` parameter).

A map describes a tiled view of a global tensor: dims innermost first, byte strides of the outer dims, the box
(tile) a TMA load copies, the shared-memory swizzle, the L2 promotion and what out-of-bounds elements read as
(OOB fill NONE = zeros, so partial edge tiles are exact for any M/N/K). The driver's rules are checked here first,
so a bad map fails with a message that names the rule instead of CUDA_ERROR_INVALID_VALUE.

Passing it: CUDA lays out kernel parameters each at its own alignment, and CUtensorMap is aligned to 64 -- at its
absolute address in constant bank 0, where sm_90's parameter space starts at offset 0x210 (not a multiple of 64):
a map that is the first parameter sits at offset 0x30 of the parameter space, the next one 128 bytes later, and the
scalars after them (ptxas' EIATTR_KPARAM_INFO records say so: `cuobjdump -elf`). pycuda launches with one packed
buffer (CU_LAUNCH_PARAM_BUFFER_POINTER) that the driver copies as the parameter space, and its native struct
packing starts at 0: maps at 0 and 128 are read from 0x30 and 0xb0, half of one map and half of the next, and the
scalars from past the end of the buffer. So the launcher reads the offsets from the cubin
(compiler_core/runtime/cubin_params.py), checks them against the argument kinds (`check_param_layout`), and packs
one buffer of the parameter space's size at those offsets (`pack_params`), passed to `prepared_call` as a single
"Ns" argument (`param_buffer_format`). pycuda's plain `__call__` caches its argument buffers in an lru_cache keyed
by the arguments in recent versions, and a numpy.void is unhashable there; `prepared_call` packs bytes directly.

(The alternative, a copy of the map in device memory passed by pointer, works too: written by a host memcpy before
the launch it needs nothing more; a map written or patched by a kernel needs `fence.proxy.tensormap::generic` on
both sides before TMA uses it. By value avoids the allocation and the fence, and the map sits in constant space.)
"""
from __future__ import annotations

import ctypes
import functools
import struct
from dataclasses import dataclass

from compiler_core.errors import BuildError

MAP_BYTES = 128
MAP_ALIGN = 64
DTYPES = {"uint8": (0, 1), "uint16": (1, 2), "uint32": (2, 4), "int32": (3, 4), "uint64": (4, 8), "int64": (5, 8),
          "float16": (6, 2), "float32": (7, 4), "float64": (8, 8), "bfloat16": (9, 2)}  # name -> (enum, bytes)
SWIZZLE = {"none": (0, None), "32B": (1, 32), "64B": (2, 64), "128B": (3, 128)}  # name -> (enum, span bytes)
L2_PROMOTION = {"none": 0, "64B": 1, "128B": 2, "256B": 3}
OOB_FILL = {"zero": 0, "nan": 1}  # NONE fills zeros; NAN_REQUEST_ZERO_FMA fills NaN
INTERLEAVE_NONE = 0


class TensorMapError(ValueError):
    """A tensor map that the driver would reject (the message names the rule), or that the driver did reject."""


@dataclass(frozen=True)
class TiledMap:
    """What cuTensorMapEncodeTiled takes, minus the address: dims and box innermost first, strides in bytes."""
    dtype: str
    dims: tuple[int, ...]
    strides: tuple[int, ...]  # bytes between consecutive indices of dims[1:], len(dims) - 1 entries
    box: tuple[int, ...]
    swizzle: str = "128B"
    l2_promotion: str = "256B"
    oob_fill: str = "zero"

    @property
    def elem_bytes(self) -> int:
        return DTYPES[self.dtype][1]

    @property
    def box_bytes(self) -> int:
        """Bytes one load lands in shared memory, and counts as complete_tx, in or out of bounds."""
        n = self.elem_bytes
        for b in self.box:
            n *= b
        return n

    def check(self, address: int | None = None) -> None:
        """Raises TensorMapError for anything the driver documents as invalid (interleave NONE)."""
        rank = len(self.dims)
        _require(1 <= rank <= 5, f"rank must be 1..5, got {rank}")
        _check_global(self.dtype, self.dims, self.strides, address)
        _require(len(self.box) == rank, f"{rank} dims need {rank} box sizes, got {len(self.box)}")
        _require(self.swizzle in SWIZZLE and self.l2_promotion in L2_PROMOTION and self.oob_fill in OOB_FILL,
                 f"unknown swizzle/l2_promotion/oob_fill: {self.swizzle!r}, {self.l2_promotion!r}, {self.oob_fill!r}")
        for i, b in enumerate(self.box):
            _require(1 <= b <= 256, f"box[{i}] = {b} must be in 1..256")
        inner = self.box[0] * self.elem_bytes
        _require(inner % 16 == 0, f"the box's inner extent ({inner} bytes) must be a multiple of 16")
        span = SWIZZLE[self.swizzle][1]
        _require(span is None or inner <= span, f"swizzle {self.swizzle} needs the box's inner extent <= {span} "
                                                f"bytes, got {inner}")


def _check_global(dtype: str, dims: tuple, strides: tuple, address: int | None) -> None:
    """The rules every map shares: its dtype, the tensor's dims and byte strides (each stepping over the last,
    multiples of 16) and a 16-byte aligned address."""
    _require(dtype in DTYPES, f"dtype {dtype!r} is not one of {sorted(DTYPES)}")
    _require(len(strides) == len(dims) - 1, f"{len(dims)} dims need {len(dims) - 1} strides, got {len(strides)}")
    if address is not None:
        _require(address % 16 == 0, f"the global address must be 16-byte aligned, got {address:#x}")
    for i, d in enumerate(dims):
        _require(1 <= d <= 1 << 32, f"dims[{i}] = {d} must be in 1..2^32")
    row = dims[0] * DTYPES[dtype][1]
    for i, s in enumerate(strides):
        _require(s % 16 == 0, f"strides[{i}] = {s} bytes must be a multiple of 16 (pad the leading dimension)")
        _require(0 < s < 1 << 40, f"strides[{i}] = {s} must be below 2^40")
        _require(s >= row, f"strides[{i}] = {s} bytes is shorter than the {row} bytes it must step over")
        row = s * dims[i + 1]


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise TensorMapError(message)


def row_major(dtype: str, shape: tuple[int, ...], box_rows: int, box_cols: int, ld: int | None = None,
              **options) -> TiledMap:
    """The map of a row-major (rows, cols) matrix or (batch, rows, cols) stack, leading dimension `ld` elements
    (default cols), loaded in boxes of box_rows x box_cols (box_cols along the contiguous dimension)."""
    if len(shape) not in (2, 3):
        raise TensorMapError(f"row_major takes (rows, cols) or (batch, rows, cols), got {shape}")
    *lead, rows, cols = shape
    ld = cols if ld is None else ld
    esize = DTYPES[dtype][1] if dtype in DTYPES else 0
    dims, strides, box = (cols, rows), (ld * esize,), (box_cols, box_rows)
    if lead:
        dims, strides, box = (*dims, lead[0]), (*strides, ld * esize * rows), (*box, 1)
    spec = TiledMap(dtype, dims, strides, box, **options)
    spec.check()
    return spec


@dataclass(frozen=True)
class Im2colMap:
    """What cuTensorMapEncodeIm2col takes, minus the address: an NHWC tensor (dims innermost first: C, W, H, N) read
    as convolution windows. One load copies `pixels` consecutive output pixels (walking W, then H, then N, wrapping at
    the bounding box) times `channels` channels into rows of `channels` elements; the load's im2col offsets (the
    filter tap) shift every pixel. The bounding box of window corners is [lower, (W, H) + upper) per spatial dim
    (innermost first), walked in steps of `element_strides` (the convolution's stride); outside the tensor TMA
    reads zeros."""
    dtype: str
    dims: tuple[int, ...]  # (C, W, H, N)
    strides: tuple[int, ...]  # bytes between consecutive W, H, N indices
    lower: tuple[int, ...]  # (w, h): -pad
    upper: tuple[int, ...]  # (w, h): pad - (filter extent - 1)
    channels: int
    pixels: int
    element_strides: tuple[int, ...] = (1, 1, 1, 1)  # (ignored for C, stride_w, stride_h, 1)
    swizzle: str = "128B"
    l2_promotion: str = "256B"
    oob_fill: str = "zero"

    @property
    def elem_bytes(self) -> int:
        return DTYPES[self.dtype][1]

    @property
    def box_bytes(self) -> int:
        """Bytes one load lands in shared memory (and counts as complete_tx), padding and zero fill included."""
        return self.pixels * self.channels * self.elem_bytes

    def check(self, address: int | None = None) -> None:
        """Raises TensorMapError for anything the driver documents as invalid for im2col maps (interleave NONE)."""
        rank = len(self.dims)
        _require(rank in (3, 4, 5), f"im2col maps take rank 3, 4 or 5, got {rank}")
        _check_global(self.dtype, self.dims, self.strides, address)
        spatial = rank - 2
        _require(len(self.lower) == spatial and len(self.upper) == spatial,
                 f"rank {rank} needs {spatial} lower and upper corner offsets, got {self.lower} and {self.upper}")
        _require(len(self.element_strides) == rank, f"{rank} dims need {rank} element strides")
        bound = CORNER_RANGE[rank]
        for name, corner in (("lower", self.lower), ("upper", self.upper)):
            _require(all(-bound <= c < bound for c in corner),
                     f"{name} corner {corner} must lie in [{-bound}, {bound - 1}] for rank {rank}")
        for i, (d, lo, hi) in enumerate(zip(self.dims[1:-1], self.lower, self.upper, strict=True)):
            _require(d + hi - lo > 0, f"the bounding box is empty along spatial dim {i}: {d} + {hi} - ({lo}) <= 0")
        _require(all(1 <= e <= 8 for e in self.element_strides),
                 f"element strides must be 1..8, got {self.element_strides}")
        _require(1 <= self.channels <= 256, f"channels per pixel must be 1..256, got {self.channels}")
        _require(1 <= self.pixels <= 1024, f"pixels per column must be 1..1024, got {self.pixels}")
        inner = self.channels * self.elem_bytes
        _require(inner % 16 == 0, f"a pixel's channels ({inner} bytes) must be a multiple of 16 bytes")
        span = SWIZZLE[self.swizzle][1]
        _require(span is None or inner <= span, f"swizzle {self.swizzle} needs a pixel's channels <= {span} bytes, "
                                                f"got {inner}")


CORNER_RANGE = {3: 1 << 15, 4: 1 << 7, 5: 1 << 4}  # |corner| bound per rank: 16 bits shared by the spatial dims


def nhwc_im2col(dtype: str, nhwc: tuple[int, int, int, int], filter_hw: tuple[int, int], stride: int, pad: int,
                channels: int, pixels: int, **options) -> Im2colMap:
    """The map of an NHWC tensor read as a stride/pad convolution with an R x S filter: corners -pad and
    pad - (extent - 1) per spatial dim, so the box's corners are exactly the output pixels' window origins."""
    N, H, W, C = nhwc
    R, S_ = filter_hw
    esize = DTYPES[dtype][1] if dtype in DTYPES else 0
    spec = Im2colMap(dtype, (C, W, H, N), (C * esize, C * esize * W, C * esize * W * H), (-pad, -pad),
                     (pad - (S_ - 1), pad - (R - 1)), channels, pixels, (1, stride, stride, 1), **options)
    spec.check()
    return spec


def spec_of(param) -> TiledMap | Im2colMap:
    """The map an ir.opaque.TensorMapParam describes: its own spec, or its row-major (rows, cols) matrix."""
    if param.spec is not None:
        param.spec.check()
        return param.spec
    return row_major(param.buffer.dtype, param.shape, *param.box, swizzle=param.swizzle)


# ---- the driver call -------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def load_libcuda() -> ctypes.CDLL:
    """libcuda.so.1 with cuTensorMapEncodeTiled's signature set; BuildError where the driver is absent or too old."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        raise BuildError(f"tensor maps need the CUDA driver library libcuda.so.1 (no NVIDIA driver here?): {exc}") \
            from None
    try:
        fn = lib.cuTensorMapEncodeTiled
    except AttributeError:
        raise BuildError("libcuda.so.1 has no cuTensorMapEncodeTiled: the driver predates CUDA 12") from None
    u32p, u64p = ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64)
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, u64p, u64p, u32p, u32p,
                   ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    fn.restype = ctypes.c_int
    im2col = getattr(lib, "cuTensorMapEncodeIm2col", None)
    if im2col is not None:
        i32p = ctypes.POINTER(ctypes.c_int)
        im2col.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, u64p, u64p, i32p, i32p,
                           ctypes.c_uint32, ctypes.c_uint32, u32p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                           ctypes.c_int]
        im2col.restype = ctypes.c_int
    lib.cuGetErrorString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    lib.cuGetErrorString.restype = ctypes.c_int
    return lib


def _error_text(lib, code: int) -> str:
    text = ctypes.c_char_p()
    if lib.cuGetErrorString(code, ctypes.byref(text)) == 0 and text.value:
        return f"{code} ({text.value.decode()})"
    return str(code)


def encode(spec: TiledMap | Im2colMap, address: int, lib: ctypes.CDLL | None = None) -> bytes:
    """The 128-byte CUtensorMap for `spec` over global memory at `address`. The driver wants a current context
    (pycuda's or PyTorch's primary context) and a 64-byte aligned output buffer."""
    spec.check(address)
    lib = lib or load_libcuda()
    rank = len(spec.dims)
    raw = ctypes.create_string_buffer(MAP_BYTES + MAP_ALIGN)
    out = (ctypes.addressof(raw) + MAP_ALIGN - 1) // MAP_ALIGN * MAP_ALIGN
    dims = (ctypes.c_uint64 * rank)(*spec.dims)
    strides = (ctypes.c_uint64 * max(1, rank - 1))(*spec.strides)
    tail = (INTERLEAVE_NONE, SWIZZLE[spec.swizzle][0], L2_PROMOTION[spec.l2_promotion], OOB_FILL[spec.oob_fill])
    if isinstance(spec, Im2colMap):
        fn = getattr(lib, "cuTensorMapEncodeIm2col", None)
        if fn is None:
            raise BuildError("libcuda.so.1 has no cuTensorMapEncodeIm2col: the driver predates CUDA 12")
        corners = [(ctypes.c_int * len(c))(*c) for c in (spec.lower, spec.upper)]
        steps = (ctypes.c_uint32 * rank)(*spec.element_strides)
        code = fn(ctypes.c_void_p(out), DTYPES[spec.dtype][0], rank, ctypes.c_void_p(address), dims, strides,
                  *corners, spec.channels, spec.pixels, steps, *tail)
        name = "cuTensorMapEncodeIm2col"
    else:
        box = (ctypes.c_uint32 * rank)(*spec.box)
        elem_strides = (ctypes.c_uint32 * rank)(*([1] * rank))
        code = lib.cuTensorMapEncodeTiled(ctypes.c_void_p(out), DTYPES[spec.dtype][0], rank,
                                          ctypes.c_void_p(address), dims, strides, box, elem_strides, *tail)
        name = "cuTensorMapEncodeTiled"
    if code != 0:
        raise TensorMapError(f"{name} failed with {_error_text(lib, code)} for {spec}")
    return ctypes.string_at(out, MAP_BYTES)


# ---- kernel parameters -----------------------------------------------------------------------------------------
PARAM_KINDS = {  # kind -> (CUDA size, CUDA alignment, struct format)
    "tensor_map": (MAP_BYTES, MAP_ALIGN, f"{MAP_BYTES}s"),
    "pointer": (8, 8, "Q"),
    "int32": (4, 4, "i"),
    "uint32": (4, 4, "I"),
    "float32": (4, 4, "f"),
}
PARAM_BANK_BASE_SM90 = 0x210  # where the parameter space starts in constant bank 0 on sm_90 (EIATTR_PARAM_CBANK)


def cuda_param_offsets(kinds: list[str] | tuple[str, ...], bank_base: int = PARAM_BANK_BASE_SM90) -> list[int]:
    """Where the kernel expects each parameter, from the start of the parameter space: each one at the next
    address of constant bank 0 that is a multiple of its alignment, the space starting at `bank_base`."""
    offsets, at = [], bank_base
    for kind in kinds:
        size, align, _ = PARAM_KINDS[kind]
        at = -(-at // align) * align
        offsets.append(at - bank_base)
        at += size
    return offsets


def packed_param_offsets(kinds: list[str] | tuple[str, ...]) -> list[int]:
    """Where native struct packing from offset 0 (what pycuda does with one format code per argument) puts each
    parameter: right only where no parameter needs more than 16-byte alignment."""
    offsets, fmt = [], ""
    for kind in kinds:
        code = PARAM_KINDS[kind][2]
        offsets.append(struct.calcsize("@" + fmt + code) - struct.calcsize("@" + code))
        fmt += code
    return offsets


def check_param_layout(kinds: list[str] | tuple[str, ...], params) -> list[int]:
    """The offsets of `params` (cubin_params.kernel_params of the compiled kernel) after checking that they are as
    many as `kinds`, of the kinds' sizes; raises TensorMapError naming the first difference."""
    if len(params) != len(kinds):
        raise TensorMapError(f"the kernel takes {len(params)} parameters, the launcher passes {len(kinds)}")
    for i, (kind, p) in enumerate(zip(kinds, params, strict=True)):
        size, align, _ = PARAM_KINDS[kind]
        if p.ordinal != i or p.size != size or p.offset % min(align, 16):
            raise TensorMapError(f"parameter {i} ({kind}, {size} bytes) is read by the kernel as {p}")
    return [p.offset for p in params]


def pack_params(kinds: list[str] | tuple[str, ...], values, offsets: list[int], size: int | None = None) -> bytes:
    """One buffer holding the parameter space: each value at its offset, zeros between (`size` bytes, default the
    end of the last parameter)."""
    end = max(o + PARAM_KINDS[k][0] for k, o in zip(kinds, offsets, strict=True))
    buf = bytearray(size if size is not None else end)
    if len(buf) < end:
        raise TensorMapError(f"a {len(buf)}-byte parameter buffer cannot hold parameters ending at {end}")
    for kind, value, offset in zip(kinds, values, offsets, strict=True):
        if kind == "tensor_map" and len(value) != MAP_BYTES:
            raise TensorMapError(f"a tensor map is {MAP_BYTES} bytes, got {len(value)}")
        struct.pack_into("<" + PARAM_KINDS[kind][2], buf, offset, value)
    return bytes(buf)


def param_buffer_format(size: int) -> list[str]:
    """The arg_types for pycuda's `Function.prepare` when the whole parameter space is passed as one argument."""
    return [f"{size}s"]
