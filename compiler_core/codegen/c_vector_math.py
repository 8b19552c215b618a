"""C renderings of vector operations GNU C has no operator for: lane-wise max/min and exp on float vectors.

Max/min select with a compare mask; exp is a loop over lanes that GCC's vectorizer turns into vector
instructions (a Cephes-style exp of ~1 ulp in the normal range). Both cost what intrinsics would while
the generated source stays portable GNU C.
"""
from __future__ import annotations

# exp(v): clamp, split v = n*ln2 + t (Cody-Waite, fused so reassociation cannot merge the halves),
# a degree-7 polynomial for exp(t), then n added to the exponent bits. Below -87.33654 the result is 0
# (true values are subnormal), above 88.72283 +inf, NaN stays NaN.
_EXP_TEMPLATE = """static inline {vtype} tf_exp_{vtype_suffix}({vtype} x) {{
  {vtype} r;
  for (int l = 0; l < {lanes}; ++l) {{
    float v = x[l];
    float c = v > -88.0f ? v : -88.0f;
    c = c < 88.72283f ? c : 88.72283f;
    float n = floorf(c * 1.44269504088896341f + 0.5f);
    float t = TF_FMA(-n, 0.693359375f, c);
    t = TF_FMA(-n, -2.12194440e-4f, t);
    float p = 1.9875691500e-4f;
    p = p * t + 1.3981999507e-3f;
    p = p * t + 8.3334519073e-3f;
    p = p * t + 4.1665795894e-2f;
    p = p * t + 1.6666665459e-1f;
    p = p * t + 5.0000001201e-1f;
    p = p * t * t + t + 1.0f;
    union {{ int i; float f; }} s;
    s.f = p;
    s.i += (int)n * 8388608;  /* n << 23 without shifting a negative int */
    float y = v < -87.33654f ? 0.0f : s.f;
    y = v > 88.72283f ? INFINITY : y;
    r[l] = v != v ? v : y;
  }}
  return r;
}}"""

_FMA_MACRO = """#ifdef __FP_FAST_FMAF
#define TF_FMA(a, b, c) fmaf((a), (b), (c))
#else
#define TF_FMA(a, b, c) ((a) * (b) + (c))
#endif"""

VECTOR_MATH = ("exp",)


def vector_math_helpers(calls: set, vector_type) -> list[str]:
    """C definitions for the vector math calls used: `calls` holds (name, scalar, lanes)."""
    if not calls:
        return []
    out = [_FMA_MACRO]
    for name, scalar, lanes in sorted(calls):
        if name != "exp" or scalar != "float32":
            raise NotImplementedError(f"vector math call {name} on {scalar}x{lanes} has no C rendering")
        vtype = vector_type(scalar, lanes)
        out.append(_EXP_TEMPLATE.format(vtype=vtype, vtype_suffix=f"{scalar}x{lanes}", lanes=lanes))
    return out


def vector_minmax(op: str, x: str, y: str, vtype: str, lanes: int) -> str:
    """Lane-wise min/max of two vectors: `?:` works on vectors only in C++, so a compare mask selects
    (a loop over lanes is not vectorized reliably once unrolled into an accumulation loop)."""
    sym = "<" if op == "min" else ">"
    return (f"({{ {vtype} tf_a = ({x}), tf_b = ({y}); __typeof__(tf_a {sym} tf_b) tf_m = tf_a {sym} tf_b; "
            f"({vtype})((tf_m & (__typeof__(tf_m))tf_a) | (~tf_m & (__typeof__(tf_m))tf_b)); }})")
