"""Accuracy of the C backend's inline float32 exp, log, tanh and erf (compiler_core/codegen/c_libm.py) over every
float32 input (or every `--stride`-th bit pattern), as GCC vectorizes them for each x86 ISA this host runs.

Each function runs in a vectorized loop over a chunk of inputs, then glibc's double-precision function gives the
reference. The error is counted as the error model counts a function's own error, |ours - ref| / (u |ref| + tiny)
(compiler_core/ops/expr_error.py, whose FUNC_ERROR_U is each function's budget in these units); where the reference
rounds to inf, NaN or a signed zero, ours must give the same (a mismatch is counted, never measured in u).

    python3 benchmarks/libm_accuracy.py                  # every float32, each ISA the host runs (a few minutes)
    python3 benchmarks/libm_accuracy.py --stride 4099 --isa avx2
"""
from __future__ import annotations

import argparse
import ctypes
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from compiler_core.codegen.c_libm import LIBM, libm_helpers  # noqa: E402
from compiler_core.ops.expr_error import FUNC_ERROR_U  # noqa: E402
from compiler_core.runtime.c_runtime import compile_shared_library  # noqa: E402
from compiler_core.target import CPU_ISAS, host_isas  # noqa: E402

_DRIVER = """
#include <stdint.h>
#include <string.h>
#define CHUNK 4096
%(loops)s
typedef void (*tf_loop)(const float*, float*);
static const tf_loop LOOPS[] = {%(names)s};

static double reference(int fn, double x) {
  switch (fn) {
%(cases)s
  }
  return 0.0;
}

static int same_class(float ours, float ref) {  /* both NaN, or the same infinity or signed zero */
  if (ref != ref) return ours != ours;
  return ours == ref && signbit(ours) == signbit(ref);
}

/* out: [worst error in u, its input's bits, mismatches, the first mismatch's bits, inputs checked] */
int tf_check(int fn, uint64_t start, uint64_t stride, uint64_t end, double* out) {
  double worst = 0.0, worst_at = 0.0, mismatches = 0.0, mismatch_at = -1.0, checked = 0.0;
  uint64_t span = stride * CHUNK;
  #pragma omp parallel for schedule(dynamic, 16) reduction(+:mismatches, checked)
  for (uint64_t base = start; base < end; base += span) {
    float x[CHUNK], y[CHUNK];
    int n = 0;
    for (uint64_t b = base; b < end && n < CHUNK; b += stride, ++n) {
      uint32_t bits = (uint32_t)b;
      memcpy(&x[n], &bits, 4);
    }
    for (int i = n; i < CHUNK; ++i) x[i] = 1.0f;
    LOOPS[fn](x, y);
    double local_worst = 0.0, local_at = 0.0, local_bad_at = -1.0;
    for (int i = 0; i < n; ++i) {
      double r = reference(fn, (double)x[i]);
      float rf = (float)r;
      uint32_t bits;
      memcpy(&bits, &x[i], 4);
      checked += 1.0;
      if (rf != rf || isinf(rf) || rf == 0.0f || y[i] != y[i] || isinf(y[i])) {
        if (!same_class(y[i], rf) && !(rf == 0.0f && fabs((double)y[i]) <= %(tiny)r)) {
          mismatches += 1.0;
          if (local_bad_at < 0) local_bad_at = bits;
        }
        continue;
      }
      double e = fabs((double)y[i] - r) / (%(u)r * fabs(r) + %(tiny)r);
      if (e > local_worst) { local_worst = e; local_at = bits; }
    }
    #pragma omp critical
    {
      if (local_worst > worst) { worst = local_worst; worst_at = local_at; }
      if (local_bad_at >= 0 && (mismatch_at < 0 || local_bad_at < mismatch_at)) mismatch_at = local_bad_at;
    }
  }
  out[0] = worst; out[1] = worst_at; out[2] = mismatches; out[3] = mismatch_at; out[4] = checked;
  return 0;
}
"""
U = 2.0 ** -24
TINY = 2.0 ** -126


def driver_source() -> str:
    loops = "\n".join(f"static void loop_{n}(const float* x, float* y) {{\n"
                      f"  for (int i = 0; i < CHUNK; ++i) y[i] = tf_{n}f(x[i]);\n}}" for n in LIBM)
    cases = "\n".join(f"    case {i}: return {n}(x);" for i, n in enumerate(LIBM))
    helpers = "\n".join(libm_helpers(set(LIBM)))
    return "#include <math.h>\n" + helpers + _DRIVER % {
        "loops": loops, "names": ", ".join(f"loop_{n}" for n in LIBM), "cases": cases, "u": U, "tiny": TINY}


def _float_of(bits: float):
    """The float32 whose bit pattern the driver returned as a double (None for -1: there was none)."""
    return None if bits < 0 else ctypes.c_float.from_buffer_copy(int(bits).to_bytes(4, "little")).value


def check(isa: str, stride: int, names=LIBM, start: int = 0, end: int = 1 << 32) -> dict:
    """{name: {worst_u, worst_input, mismatches, first_mismatch, checked, budget_u}} for one ISA's build, over the
    bit patterns start, start + stride, ... below end."""
    lib = ctypes.CDLL(str(compile_shared_library(driver_source(), march=CPU_ISAS[isa].march)))
    lib.tf_check.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64,
                             ctypes.POINTER(ctypes.c_double)]
    out = {}
    for name in names:
        res = (ctypes.c_double * 5)()
        lib.tf_check(LIBM.index(name), start, stride, end, res)
        out[name] = {"worst_u": res[0], "worst_input": _float_of(res[1]), "mismatches": int(res[2]),
                     "first_mismatch": _float_of(res[3]), "checked": int(res[4]), "budget_u": FUNC_ERROR_U[name]}
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--isa", action="append", choices=sorted(CPU_ISAS), help="default: every ISA this host runs")
    p.add_argument("--stride", type=int, default=1, help="check every stride-th float32 bit pattern")
    p.add_argument("--json", dest="json_out")
    args = p.parse_args(argv)
    isas = args.isa or [i for i in CPU_ISAS if i in host_isas()]
    results, over = {}, False
    for isa in isas:
        t0 = time.perf_counter()
        results[isa] = check(isa, args.stride)
        print(f"{isa} ({time.perf_counter() - t0:.0f} s):", flush=True)
        for name, r in results[isa].items():
            flag = r["worst_u"] > r["budget_u"] or r["mismatches"]
            over |= bool(flag)
            print(f"  {name:5s} worst {r['worst_u']:.3f} u at {r['worst_input']!r} (budget {r['budget_u']} u), "
                  f"{r['mismatches']} special-value mismatches (first at {r['first_mismatch']!r}) over "
                  f"{r['checked']:,} inputs{'  OVER BUDGET' if flag else ''}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=1))
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
