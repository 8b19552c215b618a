"""A/B of the C backend's bfloat16 vector conversions, kernels of each built in one process and timed in interleaved
rounds (benchmarks/cpu_ab.py), at each case's default config of this commit:

- `lanes`: the helpers before 2026-11-30, a loop over the vector's lanes calling the scalar conversion (GCC left the
  narrowing one scalar: an insert per lane);
- `generic`: the same integer operations on whole vectors (GCC's vector extensions), what a non-x86 target gets;
- `intrinsics`: those of the widths the target's ISA converts by x86 intrinsics (c_half.bf16_intrinsic_lanes).

    ISA=avx2 PYTHONPATH=. python3 benchmarks/results/2026-11-30-cpu-bf16/ab_bf16.py \
        "layernorm:rows=1024,cols=4096,dtype=bfloat16"

Prints, per case, the lane loops' time / each other variant's: median [min, max] of 5 rounds (> 1: faster).
"""
import sys
from functools import partial
from unittest.mock import patch

import compiler_core as cc
from benchmarks.cpu_ab import build_variants, case_workload, env_target, interleaved_ratios, summary
from compiler_core.codegen import c as cgen
from compiler_core.codegen import c_half

LANE_LOOPS = """static inline {f32v} tf_bf16_to_f32_x{lanes}({bf16v} v) {{
  {f32v} r;
  for (int l = 0; l < {lanes}; ++l) r[l] = tf_bf16_to_f32(v[l]);
  return r;
}}
static inline {bf16v} tf_f32_to_bf16_x{lanes}({f32v} v) {{
  {bf16v} r;
  for (int l = 0; l < {lanes}; ++l) r[l] = tf_f32_to_bf16(v[l]);
  return r;
}}"""
HELPERS = c_half.helpers


def lane_loop_helpers(bf16_lanes, vector_type, intrinsic_lanes=()):
    """The helpers as they were rendered before this change."""
    out = HELPERS({1}, vector_type) if bf16_lanes else []
    return out + [LANE_LOOPS.format(lanes=n, f32v=vector_type("float32", n), bf16v=vector_type("bfloat16", n))
                  for n in sorted(bf16_lanes) if n > 1]


def built(w, config, target, variant):
    if variant == "intrinsics":
        return cc.build(w, config, target)
    helpers = lane_loop_helpers if variant == "lanes" else (lambda lanes, vt, _=(): HELPERS(lanes, vt))
    with patch.object(c_half, "helpers", helpers), patch.object(cgen.c_half, "helpers", helpers):
        return cc.build(w, config, target)


def main() -> None:
    target = env_target()
    for case in sys.argv[1:]:
        w = case_workload(case)
        config = cc.default_config(w, target)
        variants = {v: partial(built, w, config, target, v) for v in ("lanes", "generic", "intrinsics")}
        kernels, ins, outs = build_variants(w, target, variants)
        ratios, times = interleaved_ratios(kernels, ins, outs, base="lanes")
        print(f"{target.arch} {w.key} {config} {summary(ratios, times, 'lanes')}", flush=True)


if __name__ == "__main__":
    main()
