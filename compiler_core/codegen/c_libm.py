"""Inline float32 exp, log, tanh and erf for the C backend, written so that GCC vectorizes a loop that calls them:
glibc's scalar expf/logf/tanhf/erff calls keep the loop scalar (tanh(x*w+b) ran 4.5x slower than numpy's).

Each is straight-line code (both sides of a range split computed, then selected; bits moved through a union), so
GCC if-converts it and the loop runs in vector registers. Accuracy, measured by benchmarks/libm_accuracy.py over
every float32, is within the error model's FUNC_ERROR_U; the polynomials are fitted by benchmarks/libm_fit.py.
"""
from __future__ import annotations

LIBM = ("exp", "log", "tanh", "erf")  # what math_call renders as tf_<name>f; sigmoid uses exp
REQUIRES = {"tanh": ("exp",)}

LOG_P = (0.3333333, -0.2500082, 0.20001243, -0.16623412, 0.14201537, -0.13159521, 0.12762523, -0.07637116)
TANH_SPLIT = 0.625
TANH_P = (-0.3333328, 0.13331406, -0.053736515, 0.020628167, -0.005692296)
ERF_SPLIT = 0.875
ERF_P = (0.12837917, -0.3761263, 0.11283622, -0.026855282, 0.0051906356, -0.00080217235, 7.842242e-05)
ERF_TOP, ERF_MID = 4.0, 2.4375
ERF_M = (0.99943346, 0.002965602, -0.0072290883, 0.010760997, -0.0107018445, 0.0071960576, -0.0030033453,
         0.00039753795, 0.00041687005, -0.00032228732, 7.026604e-05, 3.1830674e-05, -1.77594e-05, -6.105705e-07,
         1.1634526e-06)

FMA_MACRO = """#ifdef __FP_FAST_FMAF
#define TF_FMA(a, b, c) fmaf((a), (b), (c))
#else
#define TF_FMA(a, b, c) ((a) * (b) + (c))
#endif"""


def horner(var: str, coeffs: tuple[float, ...]) -> str:
    """c0 + var (c1 + var (c2 + ...)) as C, each coefficient a float literal (GCC contracts the pairs to FMAs)."""
    text = f"{coeffs[-1]!r}f"
    for c in reversed(coeffs[:-1]):
        text = f"({c!r}f + {var} * {text})"
    return text


# exp(v): clamp, split v = n ln2 + t (Cody-Waite, fused so reassociation cannot merge the halves), a degree-7
# polynomial for exp(t), then n added to the exponent bits. Below -87.33654 the result is 0 (true values are
# subnormal), above 88.72283 +inf, NaN stays NaN.
_EXP = """static inline float tf_expf(float v) {
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
  union { int i; float f; } s;
  s.f = p;
  s.i += (int)n * 8388608;  /* n << 23 without shifting a negative int */
  float y = v < -87.33654f ? 0.0f : s.f;
  y = v > 88.72283f ? INFINITY : y;
  return v != v ? v : y;
}"""

# log(x): x = 2^k m with m in [sqrt(1/2), sqrt(2)) (subnormals scaled by 2^23 first), f = m - 1 (exact), then
# k ln2 + f - f^2/2 + f^3 P(f), the large terms added last; ln2's high half has 10 bits, so k ln2_hi is exact.
_LOG = """static inline float tf_logf(float x) {
  float tiny = x < 1.17549435e-38f ? 1.0f : 0.0f;
  union { unsigned i; float f; } u;  /* unsigned: a negative x's bits must not overflow (its result is NaN) */
  u.f = x * (1.0f + tiny * 8388607.0f);
  int k = (int)(u.i - 0x3f3504f3u) >> 23;
  u.i -= (unsigned)k << 23;
  float f = u.f - 1.0f;
  float kf = (float)k - tiny * 23.0f;
  float f2 = f * f;
  float lo = kf * -2.12194440e-4f + (f2 * f * POLY - 0.5f * f2);
  float y = kf * 0.693359375f + (f + lo);
  y = x < 0.0f ? NAN : y;
  y = x == 0.0f ? -INFINITY : y;
  y = x == INFINITY ? INFINITY : y;
  return x != x ? x : y;
}"""

# tanh(x): x + x^3 P(x^2) below the split, where the result needs relative accuracy near 0; above it
# 1 - 2 / (exp(2|x|) + 1) with x's sign (exp(2|x|) = inf gives 1). NaN takes the second side and stays NaN.
_TANH = """static inline float tf_tanhf(float x) {
  float a = fabsf(x);
  float x2 = x * x;
  float small = x + x * (x2 * POLY);
  float big = copysignf(1.0f - 2.0f / (tf_expf(2.0f * a) + 1.0f), x);
  return a < SPLITf ? small : big;
}"""

# erf(x): x + x P(x^2) below the split; above it a polynomial in |x| - ERF_MID fitted on [split, ERF_TOP] (no
# division and no exp: the erfc(x) exp(x^2) form in 1/x had both), 1 from ERF_TOP on (erf rounds to 1 in float32
# from about 3.93), x's sign restored. NaN fails a >= split and takes the first side, where it stays NaN.
_ERF = """static inline float tf_erff(float x) {
  float a = fabsf(x);
  float x2 = x * x;
  float small = x + x * POLY;
  float u = (a < TOPf ? a : TOPf) - MIDf;
  float big = copysignf(a < TOPf ? MPOLY : 1.0f, x);
  return a >= SPLITf ? big : small;
}"""


def _definitions() -> dict[str, str]:
    return {
        "exp": _EXP,
        "log": _LOG.replace("POLY", horner("f", LOG_P)),
        "tanh": _TANH.replace("POLY", horner("x2", TANH_P)).replace("SPLITf", f"{TANH_SPLIT!r}f"),
        "erf": _ERF.replace("MPOLY", horner("u", ERF_M)).replace("POLY", horner("x2", ERF_P))
                   .replace("SPLITf", f"{ERF_SPLIT!r}f").replace("TOPf", f"{ERF_TOP!r}f")
                   .replace("MIDf", f"{ERF_MID!r}f"),
    }


def libm_helpers(names: set) -> list[str]:
    """C definitions of the functions named (and those they call), callees first, after the FMA macro."""
    wanted = set(names)
    for name in names:
        wanted.update(REQUIRES.get(name, ()))
    if not wanted:
        return []
    unknown = wanted - set(LIBM)
    if unknown:
        raise NotImplementedError(f"no inline C rendering of {sorted(unknown)}; there is one of {LIBM}")
    definitions = _definitions()
    return [FMA_MACRO, *(definitions[name] for name in LIBM if name in wanted)]
