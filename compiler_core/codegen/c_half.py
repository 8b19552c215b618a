"""C renderings of conversions between the half storage types and float32 (GCC 12 has no usable __bf16 math).

bfloat16 is its raw bits in C (`unsigned short`): widening is a shift into the high half of a float32;
narrowing rounds to nearest, ties to even, on the bits (NaN stays a quiet NaN; infinities and overflow to
infinity come out of the same addition). float16 is `_Float16`, whose scalar casts GCC rounds correctly;
its vectors convert lane-wise with __builtin_convertvector (a plain vector cast would reinterpret bits).
Vector bfloat16 conversions are loops over lanes that GCC's vectorizer turns into shifts and adds.
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

_VECTOR_HELPERS = """static inline {f32v} tf_bf16_to_f32_x{lanes}({bf16v} v) {{
  {f32v} r;
  for (int l = 0; l < {lanes}; ++l) r[l] = tf_bf16_to_f32(v[l]);
  return r;
}}
static inline {bf16v} tf_f32_to_bf16_x{lanes}({f32v} v) {{
  {bf16v} r;
  for (int l = 0; l < {lanes}; ++l) r[l] = tf_f32_to_bf16(v[l]);
  return r;
}}"""


def helpers(bf16_lanes: set, vector_type) -> list[str]:
    """Definitions for the bfloat16 conversions used: `bf16_lanes` holds the lane counts (1: scalar only)."""
    if not bf16_lanes:
        return []
    out = [_SCALAR_HELPERS]
    for lanes in sorted(n for n in bf16_lanes if n > 1):
        out.append(_VECTOR_HELPERS.format(lanes=lanes, f32v=vector_type("float32", lanes),
                                          bf16v=vector_type("bfloat16", lanes)))
    return out


def cast(src: str, dst: str, lanes: int, value: str, dst_type: str) -> str | None:
    """The C of a conversion between scalar types src and dst at `lanes` lanes; None when a plain C cast
    is right (no half type involved, or a scalar float16 one)."""
    pair = (src, dst)
    if "bfloat16" in pair:
        if pair not in (("bfloat16", "float32"), ("float32", "bfloat16")):
            raise NotImplementedError(f"C has no conversion from {src} to {dst} (bfloat16 converts via float32)")
        name = "tf_bf16_to_f32" if src == "bfloat16" else "tf_f32_to_bf16"
        return f"{name}({value})" if lanes == 1 else f"{name}_x{lanes}({value})"
    if lanes > 1 and "float16" in pair:
        return f"__builtin_convertvector({value}, {dst_type})"
    return None
