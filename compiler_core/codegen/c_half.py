"""C renderings of conversions between the half storage types and float32 (GCC 12 has no usable __bf16 math).

bfloat16 is its raw bits in C (`unsigned short`): widening is a shift into the high half of a float32;
narrowing rounds to nearest, ties to even, on the bits (NaN stays a quiet NaN; infinities and overflow to
infinity come out of the same addition). Vector bfloat16 conversions are the same integer operations on whole
vectors, their 16-bit lanes widened and narrowed by x86 intrinsics where the ISA has them (int16_intrinsic_lanes).

float16 is `_Float16`. How it converts follows the target (Target.half_conversion): with F16C, scalars by a cast
and 8- or 16-lane vectors by the F16C intrinsics (GCC 12's __builtin_convertvector converts one element at a time);
without it every conversion is on the bits (F16_HELPERS, and their operations on whole vectors), where a cast would
be a libgcc call; elsewhere casts and __builtin_convertvector (a plain vector cast would reinterpret bits). A
template may ask for the bits itself (the f16_load / f16_store intrinsics): GCC 12 vectorizes no loop with a
_Float16 cast in it.
"""
from __future__ import annotations

BF16_CTYPE = "unsigned short"

_SCALAR_HELPERS = """static inline float tf_bf16_to_f32(unsigned short h) {
  union { unsigned int i; float f; } u;
  u.i = (unsigned int)h << 16;
  return u.f;
}
static inline unsigned short tf_f32_to_bf16(float f) {
  union { float f; unsigned int i; } u;
  u.f = f;
  if ((u.i & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u.i >> 16) | 0x40u);  /* NaN: keep it quiet */
  return (unsigned short)((u.i + 0x7fffu + ((u.i >> 16) & 1u)) >> 16);  /* nearest, ties to even */
}"""

# float16 bits <-> float32, both exact or rounded to nearest, ties to even, as a cast rounds (checked against GCC's
# casts for every float16 and every float32 by tests/cpu/test_half_conversions.py); memcpy moves the 16 bits, which
# the vectorizer turns into plain loads and stores
F16_HELPERS = """static inline float tf_f16_bits_to_f32(unsigned short h) {
  union { unsigned int i; float f; } u;
  u.i = (unsigned int)(h & 0x7fffu) << 13;
  u.f *= 5.192296858534828e+33f;  /* 2^112 moves the exponent bias; subnormal halves come out exact */
  u.i |= (h & 0x7c00u) == 0x7c00u ? 0x7f800000u : 0u;  /* infinities and NaNs keep their payload */
  u.i |= (unsigned int)(h & 0x8000u) << 16;
  return u.f;
}
static inline unsigned short tf_f32_to_f16_bits(float f) {
  union { float f; unsigned int i; } u, s;
  u.f = f;
  unsigned int a = u.i & 0x7fffffffu;
  unsigned int normal = (a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13;
  s.f = fabsf(f) + 0.5f;  /* below 2^-14 the addition rounds to a multiple of 2^-24, the half's subnormal step */
  unsigned int h = a < 0x38800000u ? s.i - 0x3f000000u : normal;
  h = a >= 0x477ff000u ? 0x7c00u : h;  /* 65520 and above round to infinity */
  h = a > 0x7f800000u ? 0x7e00u | ((a >> 13) & 0x3ffu) : h;  /* NaN stays a quiet NaN */
  return (unsigned short)(h | ((u.i >> 16) & 0x8000u));
}
static inline float tf_f16_load(const _Float16* p) {
  unsigned short h;
  __builtin_memcpy(&h, p, 2);
  return tf_f16_bits_to_f32(h);
}
static inline void tf_f16_store(_Float16* p, float f) {
  unsigned short h = tf_f32_to_f16_bits(f);
  __builtin_memcpy(p, &h, 2);
}"""

# lanes -> (widen, narrow) of 16-bit integer lanes to 32-bit ones and back (values below 2^16) by x86 intrinsics:
# one zero-extension; one truncation (AVX-512F: 1.1x faster than two packs and a permute in bfloat16 layernorm and
# x*2 on Zen 5) or one unsigned-saturating pack (SSE4.1). GCC 12 splits
# __builtin_convertvector's 16-lane widening into halves, narrows by a pack and a permute, and loads a 4-lane vector
# of 16-bit values by a movlps that merges into the register's old value, which chains each iteration of a loop to
# the one before (float16 layernorm on SSE: 11.0 ms, by intrinsics 3.8 ms)
_X86_16_32 = {
    4: ("_mm_cvtepu16_epi32(_mm_cvtsi64_si128((long long)({v})))",
        "_mm_cvtsi128_si64(_mm_packus_epi32((__m128i)({r}), (__m128i)({r})))"),
    8: ("_mm256_cvtepu16_epi32((__m128i)({v}))",
        "_mm_packus_epi32(_mm256_castsi256_si128((__m256i)({r})), _mm256_extracti128_si256((__m256i)({r}), 1))"),
    16: ("_mm512_cvtepu16_epi32((__m256i)({v}))", "_mm512_cvtepi32_epi16((__m512i)({r}))")}
_X86_NEEDS = {4: "sse4_1", 8: "avx2", 16: "avx512f"}


def int16_intrinsic_lanes(target) -> tuple[int, ...]:
    """The widths at which a C target converts vectors of 16-bit lanes to 32-bit ones and back by x86 intrinsics
    (_X86_16_32): those its ISA has the instructions for; () off x86-64."""
    isa = target.isa
    return () if isa is None else tuple(n for n, flag in _X86_NEEDS.items() if flag in isa.needs)


def _widen16(v: str, lanes: int, intrinsic: tuple) -> str:
    """The C of `v`, a vector of `lanes` 16-bit lanes, zero-extended to tf_u32x{lanes}."""
    if lanes in intrinsic:
        return f"(tf_u32x{lanes}){_X86_16_32[lanes][0].format(v=v)}"
    return f"__builtin_convertvector({v}, tf_u32x{lanes})"


def _narrow16(r: str, lanes: int, intrinsic: tuple, half_type: str) -> str:
    """The C of `r`, a tf_u32x{lanes} vector of values below 2^16, as `half_type`."""
    if lanes in intrinsic:
        return f"({half_type}){_X86_16_32[lanes][1].format(r=r)}"
    return f"({half_type})__builtin_convertvector({r}, tf_u16x{lanes})"


_INT_VECTORS = """typedef unsigned short tf_u16x{lanes} __attribute__((vector_size({hbytes}), aligned(2)));
typedef unsigned int tf_u32x{lanes} __attribute__((vector_size({wbytes})));
typedef int tf_i32x{lanes} __attribute__((vector_size({wbytes})));"""

# Vectors convert by F16_HELPERS' and _SCALAR_HELPERS' operations on whole vectors: GCC's vectorizer turns a loop
# over a vector's lanes into vector code where it widens but left it scalar where it narrows (an insert per lane).
# Compares are signed (SSE and AVX2 have no unsigned ones; the operands are below 2^31 once the sign is masked off).
# float16 vectors on the bits serve a target without F16C, where __builtin_convertvector would call libgcc per lane.
_F16_VECTOR_HELPERS = """static inline {f32v} tf_f16_to_f32_x{lanes}({f16v} v) {{
  tf_u32x{lanes} h = {widen};
  {f32v} m = ({f32v})((h & 0x7fffu) << 13) * 5.192296858534828e+33f;  /* 2^112 moves the exponent bias */
  tf_u32x{lanes} r = (tf_u32x{lanes})m;
  r |= (tf_u32x{lanes})((tf_i32x{lanes})(h & 0x7c00u) == 0x7c00) & 0x7f800000u;  /* infinities and NaNs */
  return ({f32v})(r | ((h & 0x8000u) << 16));
}}
static inline {f16v} tf_f32_to_f16_x{lanes}({f32v} v) {{
  tf_u32x{lanes} u = (tf_u32x{lanes})v;
  tf_u32x{lanes} a = u & 0x7fffffffu;
  tf_i32x{lanes} sa = (tf_i32x{lanes})a;
  tf_u32x{lanes} normal = (a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13;
  tf_u32x{lanes} sub = (tf_u32x{lanes})(({f32v})a + 0.5f) - 0x3f000000u;  /* the subnormal step, as F16_HELPERS */
  tf_u32x{lanes} h = (tf_u32x{lanes})(sa < 0x38800000);
  h = (h & sub) | (~h & normal);
  tf_u32x{lanes} inf = (tf_u32x{lanes})(sa >= 0x477ff000);
  h = (inf & 0x7c00u) | (~inf & h);
  tf_u32x{lanes} nan = (tf_u32x{lanes})(sa > 0x7f800000);
  h = (nan & (0x7e00u | ((a >> 13) & 0x3ffu))) | (~nan & h);
  h |= (u >> 16) & 0x8000u;
  return {narrow};
}}"""
_BF16_VECTOR_HELPERS = """static inline {f32v} tf_bf16_to_f32_x{lanes}({bf16v} v) {{
{widen}
}}
static inline {bf16v} tf_f32_to_bf16_x{lanes}({f32v} v) {{
  tf_u32x{lanes} u = (tf_u32x{lanes})v;
  tf_u32x{lanes} nearest = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;  /* ties to even */
  tf_u32x{lanes} quiet = (u >> 16) | 0x40u;
  tf_u32x{lanes} nan = (tf_u32x{lanes})((tf_i32x{lanes})(u & 0x7fffffffu) > 0x7f800000);
  tf_u32x{lanes} r = (nan & quiet) | (~nan & nearest);
  return {narrow};
}}"""
# bfloat16's widening without the intrinsics: the lane loop, which GCC vectorizes (with __builtin_convertvector,
# which GCC 12 splits into halves, bfloat16 reduce_sum ran 0.5-0.66x as fast on x86 in a first A/B, 2026-11-30)
_BF16_LANE_WIDEN = """  {f32v} r;
  for (int l = 0; l < {lanes}; ++l) r[l] = tf_bf16_to_f32(v[l]);
  return r;"""


def f16_helpers(lanes: set, vector_type, intrinsic: tuple = ()) -> list[str]:
    """The float16 conversions on the bits used: `lanes` holds the lane counts (1: the scalar ones only); vectors
    whose width is in `intrinsic` (int16_intrinsic_lanes) widen and narrow their lanes by x86 intrinsics."""
    if not lanes:
        return []
    out = [F16_HELPERS]
    for n in sorted(n for n in lanes if n > 1):
        f16v = vector_type("float16", n)
        out.append(_INT_VECTORS.format(lanes=n, hbytes=2 * n, wbytes=4 * n))
        out.append(_F16_VECTOR_HELPERS.format(lanes=n, f32v=vector_type("float32", n), f16v=f16v,
                                              widen=_widen16(f"(tf_u16x{n})v", n, intrinsic),
                                              narrow=_narrow16("h", n, intrinsic, f16v)))
    return out


def helpers(bf16_lanes: set, vector_type, intrinsic: tuple = ()) -> list[str]:
    """Definitions for the bfloat16 conversions used: `bf16_lanes` holds the lane counts (1: scalar only); vectors
    whose width is in `intrinsic` (int16_intrinsic_lanes) convert by x86 intrinsics."""
    if not bf16_lanes:
        return []
    out = [_SCALAR_HELPERS]
    for n in sorted(n for n in bf16_lanes if n > 1):
        f32v, bf16v = vector_type("float32", n), vector_type("bfloat16", n)
        widen = (f"  return ({f32v})({_widen16('v', n, intrinsic)} << 16);" if n in intrinsic
                 else _BF16_LANE_WIDEN.format(f32v=f32v, lanes=n))
        out.append(_INT_VECTORS.format(lanes=n, hbytes=2 * n, wbytes=4 * n))
        out.append(_BF16_VECTOR_HELPERS.format(lanes=n, f32v=f32v, bf16v=bf16v, widen=widen,
                                               narrow=_narrow16("r", n, intrinsic, bf16v)))
    return out


# lanes -> (widen, narrow, the half vector's integer type, the float vector's type): GCC 12 renders
# __builtin_convertvector of float16 vectors one element at a time, 10x slower than F16C's one instruction
_F16C = {8: ("_mm256_cvtph_ps", "_mm256_cvtps_ph", "__m128i", "__m256"),
         16: ("_mm512_cvtph_ps", "_mm512_cvtps_ph", "__m256i", "__m512")}


def f16c_lanes(target) -> tuple[int, ...]:
    """The float16 vector widths a C target converts by intrinsics: 8 with F16C, and 16 with AVX-512F too."""
    if target.half_conversion != "f16c":
        return ()
    return (8, 16) if "avx512f" in target.isa.needs else (8,)


def cast(src: str, dst: str, lanes: int, value: str, dst_type: str, f16c: tuple = (),
         f16_bits: bool = False) -> str | None:
    """The C of a conversion between scalar types src and dst at `lanes` lanes; None when a plain C cast
    is right (no half type involved, or a scalar float16 one). float16 vectors whose width is in `f16c`
    (f16c_lanes) convert by the F16C intrinsics, with `f16_bits` (no F16C) on the bits, both rounding to
    nearest even as a cast does."""
    pair = (src, dst)
    if "bfloat16" in pair:
        if pair not in (("bfloat16", "float32"), ("float32", "bfloat16")):
            raise NotImplementedError(f"C has no conversion from {src} to {dst} (bfloat16 converts via float32)")
        name = "tf_bf16_to_f32" if src == "bfloat16" else "tf_f32_to_bf16"
        return f"{name}({value})" if lanes == 1 else f"{name}_x{lanes}({value})"
    if lanes > 1 and "float16" in pair:
        widening = pair == ("float16", "float32")
        if widening or pair == ("float32", "float16"):
            if lanes in f16c:
                widen, narrow, half_int, floats = _F16C[lanes]
                if widening:
                    return f"(({dst_type}){widen}(({half_int})({value})))"
                return f"(({dst_type}){narrow}(({floats})({value}), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))"
            if f16_bits:
                return f"tf_{'f16_to_f32' if widening else 'f32_to_f16'}_x{lanes}({value})"
        return f"__builtin_convertvector({value}, {dst_type})"
    return None


def bf16_dot_helper(vector_type) -> str:
    """tf_bf16_dot16(acc, pair, b): acc + the products of one bfloat16 pair (A's two K steps, broadcast) with 16
    column pairs of b, by AVX-512 BF16's vdpbf16ps (the `bf16_dot` intrinsic of the CPU GEMM's pair microkernel)."""
    f32, pair, pairs = vector_type("float32", 16), vector_type("bfloat16", 2), vector_type("bfloat16", 32)
    return (f"static inline {f32} tf_bf16_dot16({f32} acc, {pair} a, {pairs} b) {{\n"
            "  unsigned int both;\n"
            "  __builtin_memcpy(&both, &a, sizeof both);\n"
            f"  return ({f32})_mm512_dpbf16_ps((__m512)acc, (__m512bh)_mm512_set1_epi32((int)both), (__m512bh)b);\n"
            "}")
