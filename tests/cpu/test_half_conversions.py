"""The C conversions of the half storage types, bit for bit against ml_dtypes / numpy: bfloat16's round to nearest
even (ties both ways, NaN, infinities, overflow, subnormals) in the scalar and vector helpers the codegen emits,
and float16's vector conversion and its scalar conversions on the bits (loads and stores)."""
from __future__ import annotations

import ctypes

import ml_dtypes
import numpy as np
import pytest

from compiler_core.codegen import c_half
from compiler_core.codegen.c import CCodegen
from compiler_core.runtime.c_runtime import compile_shared_library

LANES = 8
HARNESS = """
typedef float tf_float32x8 __attribute__((vector_size(32), aligned(4)));
typedef unsigned short tf_bfloat16x8 __attribute__((vector_size(16), aligned(2)));
typedef _Float16 tf_float16x8 __attribute__((vector_size(16), aligned(2)));
{helpers}
void narrow(const float* x, unsigned short* y, long n) {{ for (long i = 0; i < n; ++i) y[i] = tf_f32_to_bf16(x[i]); }}
void widen(const unsigned short* x, float* y, long n) {{ for (long i = 0; i < n; ++i) y[i] = tf_bf16_to_f32(x[i]); }}
void narrow_x8(const float* x, unsigned short* y, long n) {{
  for (long i = 0; i < n; i += 8) *(tf_bfloat16x8*)&y[i] = {narrow8};
}}
void widen_x8(const unsigned short* x, float* y, long n) {{
  for (long i = 0; i < n; i += 8) *(tf_float32x8*)&y[i] = {widen8};
}}
void f16_narrow_x8(const float* x, _Float16* y, long n) {{
  for (long i = 0; i < n; i += 8) *(tf_float16x8*)&y[i] = {f16_narrow8};
}}
void f16_store(const float* x, _Float16* y, long n) {{ for (long i = 0; i < n; ++i) tf_f16_store(&y[i], x[i]); }}
void f16_load(const _Float16* x, float* y, long n) {{ for (long i = 0; i < n; ++i) y[i] = tf_f16_load(&x[i]); }}
void f16_widen_x8(const _Float16* x, float* y, long n) {{
  for (long i = 0; i < n; i += 8) *(tf_float32x8*)&y[i] = {f16_widen8};
}}
"""


@pytest.fixture(scope="module")
def lib():
    vector_type = CCodegen().vector_type
    source = HARNESS.format(
        helpers="\n".join([*c_half.helpers({1, LANES}, vector_type), *c_half.f16_helpers({1}, vector_type)]),
        narrow8=c_half.cast("float32", "bfloat16", LANES, "*(const tf_float32x8*)&x[i]", "tf_bfloat16x8"),
        widen8=c_half.cast("bfloat16", "float32", LANES, "*(const tf_bfloat16x8*)&x[i]", "tf_float32x8"),
        f16_narrow8=c_half.cast("float32", "float16", LANES, "*(const tf_float32x8*)&x[i]", "tf_float16x8"),
        f16_widen8=c_half.cast("float16", "float32", LANES, "*(const tf_float16x8*)&x[i]", "tf_float32x8"))
    return ctypes.CDLL(str(compile_shared_library(source)))


def _float32_patterns() -> np.ndarray:
    """Bit patterns where rounding to bfloat16 is decided: ties (low half 0x8000) below odd and even upper
    halves, one bit either side of them, NaNs (quiet, signalling, negative), infinities, float32's largest (which
    rounds to inf), subnormals and zeros, then random patterns; a multiple of 8 long."""
    upper = np.arange(0, 1 << 16, 37, dtype=np.uint32) << 16
    low = np.array([0x0000, 0x7FFF, 0x8000, 0x8001, 0xFFFF], dtype=np.uint32)
    ties = (upper[:, None] | low[None, :]).ravel()
    special = np.array([0x7FC00000, 0x7F800001, 0xFFC00001, 0x7FBFFFFF, 0x7F800000, 0xFF800000, 0x7F7FFFFF,
                        0x7F7F8000, 0x7F7F7FFF, 0xFF7FFFFF, 0x00000001, 0x00008000, 0x00018000, 0x007FFFFF,
                        0x80000001, 0x00000000, 0x80000000, 0x3F808000, 0x3F818000], dtype=np.uint32)
    rand = np.random.default_rng(0).integers(0, 1 << 32, 100_000, dtype=np.uint64).astype(np.uint32)
    bits = np.concatenate([ties, special, rand])
    return bits[: bits.size - bits.size % LANES]


def _call(fn, x: np.ndarray, out_dtype) -> np.ndarray:
    y = np.empty(x.size, out_dtype)
    fn(ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(y.ctypes.data), ctypes.c_long(x.size))
    return y


def _same_bits_or_both_nan(got_bits: np.ndarray, want_bits: np.ndarray, as_float) -> None:
    got, want = as_float(got_bits), as_float(want_bits)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    mismatch = np.flatnonzero((got_bits != want_bits) & ~nan)
    assert mismatch.size == 0, f"{mismatch.size} differ, first input index {mismatch[:5]}"


@pytest.mark.parametrize("name", ["narrow", "narrow_x8"])
def test_float32_to_bfloat16_rounds_to_nearest_even_like_ml_dtypes(lib, name):
    bits = _float32_patterns()
    x = bits.view(np.float32)
    got = _call(getattr(lib, name), x, np.uint16)
    with np.errstate(all="ignore"):
        want = x.astype(ml_dtypes.bfloat16).view(np.uint16)
    _same_bits_or_both_nan(got, want, lambda b: b.view(ml_dtypes.bfloat16).astype(np.float32))


def test_ties_go_to_even_and_nan_stays_quiet(lib):
    x = np.array([0x3F808000, 0x3F818000, 0x7F7FFFFF, 0x7F800001], dtype=np.uint32).view(np.float32)
    got = _call(lib.narrow, x, np.uint16)
    # 1 + 2^-8 (a tie) -> 1; 1 + 3 * 2^-8 -> 1 + 2^-6 (even); float32's max -> inf; a signalling NaN -> quiet NaN
    assert [hex(v) for v in got[:3]] == ["0x3f80", "0x3f82", "0x7f80"]
    assert got[3] & 0x7FC0 == 0x7FC0


@pytest.mark.parametrize("name", ["widen", "widen_x8"])
def test_bfloat16_to_float32_is_exact_for_every_pattern(lib, name):
    bits = np.arange(1 << 16, dtype=np.uint16)
    got = _call(getattr(lib, name), bits, np.float32)
    want = bits.view(ml_dtypes.bfloat16).astype(np.float32)
    _same_bits_or_both_nan(got.view(np.uint32), want.view(np.uint32), lambda b: b.view(np.float32))


def test_float16_vectors_convert_by_value_not_by_bits(lib):
    bits = _float32_patterns()
    x = bits.view(np.float32)
    _check_float16_conversions(lib.f16_narrow_x8, lib.f16_widen_x8, x)


def _check_float16_conversions(narrow, widen, x: np.ndarray) -> None:
    """narrow(x) rounds to float16 bit for bit as numpy does, and widen gives every float16 exactly."""
    got = _call(narrow, x, np.float16)
    with np.errstate(all="ignore"):
        want = x.astype(np.float16)
    _same_bits_or_both_nan(got.view(np.uint16), want.view(np.uint16), lambda b: b.view(np.float16))
    every = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    back = _call(widen, every, np.float32)
    _same_bits_or_both_nan(back.view(np.uint32), every.astype(np.float32).view(np.uint32),
                           lambda b: b.view(np.float32))


def _float16_deciding_patterns() -> np.ndarray:
    """float32 patterns where rounding to float16 is decided: every 7th pattern from float16's smallest subnormal's
    half to past its largest finite (normal ties at bit 13, subnormal steps, the overflow edge 65520), exact ties
    and one bit either side of them at every float16, and the specials."""
    dense = np.arange(0x33000000, 0x47800100, 7, dtype=np.uint32)
    halves = np.arange(1 << 15, dtype=np.uint16).view(np.float16).astype(np.float32).view(np.uint32)
    step = np.where(halves < 0x38800000, 1 << 13, 1 << 12)  # half a float16 step in float32 bits (normal range)
    ties = np.concatenate([halves + step + d for d in (-1, 0, 1)]).astype(np.uint32)
    bits = np.concatenate([dense, ties, _float32_patterns()])
    return np.concatenate([bits, bits | np.uint32(0x80000000)])


def test_float16_on_the_bits_rounds_like_a_cast_and_widens_exactly(lib):
    """The scalar loads and stores; the vectors' at every width: test_float16_vectors_on_the_bits_..."""
    bits = _float16_deciding_patterns()
    x = bits[: bits.size - bits.size % LANES].view(np.float32)
    _check_float16_conversions(lib.f16_store, lib.f16_load, x)
    _check_nan_payloads(lib.f16_load)


def _check_nan_payloads(widen) -> None:
    """A NaN keeps its sign and payload (quiet or signalling) when widened."""
    nan_in = np.array([0x7E01, 0xFD01] + [0] * 14, dtype=np.uint16)
    out = _call(widen, nan_in.view(np.float16), np.float32).view(np.uint32)[:2]
    nan_in = nan_in[:2]
    assert np.all(np.isnan(out.view(np.float32)))
    assert np.array_equal((out >> 13) & 0x3FF, nan_in & 0x3FF) and np.array_equal(out >> 31, nan_in >> 15)


F16C_HARNESS = """#include <immintrin.h>
typedef float tf_float32x{n} __attribute__((vector_size({fbytes}), aligned(4)));
typedef _Float16 tf_float16x{n} __attribute__((vector_size({hbytes}), aligned(2)));
void narrow(const float* x, _Float16* y, long n) {{
  for (long i = 0; i < n; i += {n}) *(tf_float16x{n}*)&y[i] = {narrow};
}}
void widen(const _Float16* x, float* y, long n) {{
  for (long i = 0; i < n; i += {n}) *(tf_float32x{n}*)&y[i] = {widen};
}}
"""


@pytest.mark.parametrize("lanes", [8, 16])
def test_float16_vectors_by_f16c_intrinsics_match_the_casts(lanes):
    from compiler_core.target import cpu_target

    if lanes not in c_half.f16c_lanes(cpu_target()):
        pytest.skip(f"this host converts no {lanes}-lane float16 vector by intrinsics")
    f32, f16 = f"tf_float32x{lanes}", f"tf_float16x{lanes}"
    source = F16C_HARNESS.format(
        n=lanes, fbytes=4 * lanes, hbytes=2 * lanes,
        narrow=c_half.cast("float32", "float16", lanes, f"*(const {f32}*)&x[i]", f16, f16c=(lanes,)),
        widen=c_half.cast("float16", "float32", lanes, f"*(const {f16}*)&x[i]", f32, f16c=(lanes,)))
    width = 32 * lanes  # the intrinsics of that vector width in bits, each way
    assert f"_mm{width}_cvtph_ps(" in source and f"_mm{width}_cvtps_ph(" in source
    lib = ctypes.CDLL(str(compile_shared_library(source)))
    bits = _float16_deciding_patterns()
    x = bits[: bits.size - bits.size % 16].view(np.float32)
    _check_float16_conversions(lib.narrow, lib.widen, x)


VECTOR_HARNESS = """{include}
typedef float tf_float32x{n} __attribute__((vector_size({fbytes}), aligned(4)));
typedef {half_c} tf_{half}x{n} __attribute__((vector_size({hbytes}), aligned(2)));
{helpers}
void narrow(const float* x, {half_c}* y, long n) {{
  for (long i = 0; i < n; i += {n}) *(tf_{half}x{n}*)&y[i] = {narrow};
}}
void widen(const {half_c}* x, float* y, long n) {{
  for (long i = 0; i < n; i += {n}) *(tf_float32x{n}*)&y[i] = {widen};
}}
"""
INT16_INTRINSIC_ISA = {4: "sse", 8: "avx2", 16: "avx512"}  # the narrowest CPU ISA with each width's intrinsics


def _vector_library(half: str, how: str, lanes: int):
    """The library of VECTOR_HARNESS for `half` at `lanes`, its 16-bit lanes converted by GCC's vector operations or
    by x86 intrinsics (built for the narrowest ISA that has them); skips where this host cannot run it."""
    from compiler_core.target import cpu_target, host_runs

    target = cpu_target(isa=INT16_INTRINSIC_ISA[lanes]) if how == "intrinsics" else cpu_target()
    if not host_runs(target):
        pytest.skip(f"this host does not run {target.arch}")
    intrinsic = c_half.int16_intrinsic_lanes(target) if how == "intrinsics" else ()
    assert (lanes in intrinsic) == (how == "intrinsics")
    f32, hv = f"tf_float32x{lanes}", f"tf_{half}x{lanes}"
    bits = half == "float16"
    make = c_half.f16_helpers if bits else c_half.helpers
    source = VECTOR_HARNESS.format(
        include="#include <immintrin.h>" if intrinsic else "", n=lanes, fbytes=4 * lanes, hbytes=2 * lanes,
        half=half, half_c="_Float16" if bits else "unsigned short",
        helpers="\n".join(make({1, lanes}, CCodegen().vector_type, intrinsic)),
        narrow=c_half.cast("float32", half, lanes, f"*(const {f32}*)&x[i]", hv, f16_bits=bits),
        widen=c_half.cast(half, "float32", lanes, f"*(const {hv}*)&x[i]", f32, f16_bits=bits))
    assert ("_mm" in source) == (how == "intrinsics")
    return ctypes.CDLL(str(compile_shared_library(source, march=target.march_flags)))


@pytest.mark.parametrize("lanes", [4, 8, 16])
@pytest.mark.parametrize("how", ["generic", "intrinsics"])
def test_bfloat16_vectors_round_and_widen_bit_for_bit(how, lanes):
    """Each width of the vector helpers, in GCC's vector operations and in x86 intrinsics, narrows as ml_dtypes
    rounds (ties, NaN, overflow, subnormals) and widens every pattern."""
    lib = _vector_library("bfloat16", how, lanes)
    bits = _float32_patterns()
    x = bits[: bits.size - bits.size % 16].view(np.float32)
    got = _call(lib.narrow, x, np.uint16)
    with np.errstate(all="ignore"):
        want = x.astype(ml_dtypes.bfloat16).view(np.uint16)
    _same_bits_or_both_nan(got, want, lambda b: b.view(ml_dtypes.bfloat16).astype(np.float32))
    assert np.all(got[np.isnan(x)] & 0x7FC0 == 0x7FC0)  # every NaN comes out quiet
    every = np.arange(1 << 16, dtype=np.uint16)
    back = _call(lib.widen, every, np.float32)
    _same_bits_or_both_nan(back.view(np.uint32), every.view(ml_dtypes.bfloat16).astype(np.float32).view(np.uint32),
                           lambda b: b.view(np.float32))


@pytest.mark.parametrize("lanes", [4, 8, 16])
@pytest.mark.parametrize("how", ["generic", "intrinsics"])
def test_float16_vectors_on_the_bits_round_like_a_cast_at_every_width(how, lanes):
    lib = _vector_library("float16", how, lanes)
    bits = _float16_deciding_patterns()
    _check_float16_conversions(lib.narrow, lib.widen, bits[: bits.size - bits.size % 16].view(np.float32))
    _check_nan_payloads(lib.widen)
