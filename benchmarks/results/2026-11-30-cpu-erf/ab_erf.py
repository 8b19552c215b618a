"""A/B of the C backend's inline erf: before 2026-11-30 (above |x| = 0.875, 1 - exp(-x^2) y Q(y) with y = 1/|x|: a
division and an exp) against now (a degree-14 polynomial in |x| - 2.4375), kernels of each built in one process
and timed in interleaved rounds (benchmarks/cpu_ab.py), at each case's default config.

    ISA=avx2 PYTHONPATH=. python3 benchmarks/results/2026-11-30-cpu-erf/ab_erf.py \
        "elementwise:rows=1024,cols=4096,expr=gelu(x*w+b),vectors=w,b"

Prints, per case, the time before / now: median [min, max] of 5 rounds (> 1: faster now).
"""
import contextlib
from unittest.mock import patch

from benchmarks.cpu_ab import before_now_main
from compiler_core.codegen import c_libm

ERFC_Q = (0.56172556, 0.030705025, -0.44435173, 0.45194414, -0.18232492, -0.042906158, 0.08385408, -0.036999807,
          0.0059373844)
BEFORE = """static inline float tf_erff(float x) {
  float a = fabsf(x);
  float x2 = x * x;
  float small = x + x * POLY;
  float y = 1.0f / a;
  float big = copysignf(1.0f - tf_expf(-x2) * (y * QPOLY), x);
  return a < SPLITf ? small : big;
}"""
DEFINITIONS = c_libm._definitions


def before_definitions() -> dict[str, str]:
    return {**DEFINITIONS(), "erf": BEFORE.replace("QPOLY", c_libm.horner("y", ERFC_Q))
            .replace("POLY", c_libm.horner("x2", c_libm.ERF_P)).replace("SPLITf", f"{c_libm.ERF_SPLIT!r}f")}


def patched() -> contextlib.ExitStack:
    stack = contextlib.ExitStack()
    stack.enter_context(patch.object(c_libm, "_definitions", before_definitions))
    stack.enter_context(patch.object(c_libm, "REQUIRES", {**c_libm.REQUIRES, "erf": ("exp",)}))
    return stack


def main() -> None:
    before_now_main(patched)

if __name__ == "__main__":
    main()
