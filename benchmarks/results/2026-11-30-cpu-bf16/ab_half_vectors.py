"""A/B of the C backend's vector conversions of the half types that it renders itself (bfloat16 everywhere, float16
on the bits where the ISA has no F16C), kernels of each built in one process and timed in interleaved rounds
(benchmarks/cpu_ab.py), at each case's default config of this commit:

- `lanes`: the helpers before 2026-11-30, a loop over the vector's lanes calling the scalar conversion (GCC left the
  narrowing one scalar: an insert per lane);
- `generic`: whole-vector operations in GCC's vector extensions (bfloat16 widening by the lane loop), what a
  target without the intrinsics gets;
- `intrinsics`: the 16-bit lanes of the widths the ISA has the instructions for widened and narrowed by x86
  intrinsics (c_half.int16_intrinsic_lanes): what tunefarm renders now.

    ISA=sse PYTHONPATH=. python3 benchmarks/results/2026-11-30-cpu-bf16/ab_half_vectors.py \
        "layernorm:rows=1024,cols=4096,dtype=float16"

Prints, per case, the lane loops' time / each other variant's: median [min, max] of 5 rounds (> 1: faster).
"""
from functools import partial
from unittest.mock import patch

import compiler_core as cc
from benchmarks.cpu_ab import ab_main
from compiler_core.codegen import c_half

BF16_LANES = """static inline {f32v} tf_bf16_to_f32_x{n}({hv} v) {{
  {f32v} r;
  for (int l = 0; l < {n}; ++l) r[l] = tf_bf16_to_f32(v[l]);
  return r;
}}
static inline {hv} tf_f32_to_bf16_x{n}({f32v} v) {{
  {hv} r;
  for (int l = 0; l < {n}; ++l) r[l] = tf_f32_to_bf16(v[l]);
  return r;
}}"""
F16_LANES = """typedef unsigned short tf_f16bits_x{n} __attribute__((vector_size({hbytes}), aligned(2)));
static inline {f32v} tf_f16_to_f32_x{n}({hv} v) {{
  tf_f16bits_x{n} h = (tf_f16bits_x{n})v;
  {f32v} r;
  for (int l = 0; l < {n}; ++l) r[l] = tf_f16_bits_to_f32(h[l]);
  return r;
}}
static inline {hv} tf_f32_to_f16_x{n}({f32v} v) {{
  tf_f16bits_x{n} h;
  for (int l = 0; l < {n}; ++l) h[l] = tf_f32_to_f16_bits(v[l]);
  return ({hv})h;
}}"""
BF16_HELPERS, F16_HELPERS = c_half.helpers, c_half.f16_helpers


def lane_loops(scalar_helpers, template, half):
    """The helpers as rendered before this change: the scalar ones, and lane loops over them."""
    def render(lanes, vector_type, intrinsic=()):
        out = scalar_helpers({1}, vector_type) if lanes else []
        return out + [template.format(n=n, hbytes=2 * n, f32v=vector_type("float32", n), hv=vector_type(half, n))
                      for n in sorted(lanes) if n > 1]
    return render


def built(w, config, target, variant):
    if variant == "intrinsics":
        return cc.build(w, config, target)
    if variant == "lanes":
        bf16 = lane_loops(BF16_HELPERS, BF16_LANES, "bfloat16")
        f16 = lane_loops(F16_HELPERS, F16_LANES, "float16")
    else:
        def bf16(lanes, vector_type, intrinsic=()):
            return BF16_HELPERS(lanes, vector_type)

        def f16(lanes, vector_type, intrinsic=()):
            return F16_HELPERS(lanes, vector_type)
    with patch.object(c_half, "helpers", bf16), patch.object(c_half, "f16_helpers", f16):
        return cc.build(w, config, target)


def main() -> None:
    ab_main(lambda w, config, target: {v: partial(built, w, config, target, v)
                                       for v in ("lanes", "generic", "intrinsics")}, base="lanes")

if __name__ == "__main__":
    main()
