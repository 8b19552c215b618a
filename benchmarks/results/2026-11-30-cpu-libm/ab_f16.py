"""A/B of scalar float16 loads and stores: _Float16 casts (as before 2026-11-30) against the conversions on the bits
(c_half.F16_HELPERS), kernels of each built in one process and timed in interleaved rounds. Where the default config
has the elementwise template's `half_io` (float16 on an ISA with F16C), each of its choices (cast, bits, staged);
elsewhere the C backend's `f16_bits` off (casts: without F16C, libgcc calls) and on (what it renders without F16C).

    ISA=avx2 PYTHONPATH=. python3 benchmarks/results/2026-11-30-cpu-libm/ab_f16.py \
        "elementwise:rows=1024,cols=4096,expr=tanh(x),dtype=float16"

Prints, per case, the casts' time / each other variant's: median [min, max] of 5 rounds (> 1: faster than casts).
"""
import os
import statistics
import sys
import time

import numpy as np

import compiler_core as cc
from benchmarks.cpu_matmul import median_ns
from compiler_core.codegen import c as cgen
from compiler_core.workload import parse_params

RENDER = cgen.CCodegen.render


def rendering(f16_bits):
    def render(self, module):
        self.f16_bits = self.f16_bits if f16_bits is None else f16_bits
        return RENDER(self, module)
    return render


def timed(kernel, ins, outs) -> float:
    return median_ns(lambda: kernel(*ins, *outs), min_runs=3, min_seconds=0.2, warmup=1)


def main() -> None:
    target = cc.cpu_target(isa=os.environ["ISA"]) if os.environ.get("ISA") else cc.cpu_target()
    for case in sys.argv[1:]:
        op, _, params = case.partition(":")
        w = cc.make_workload(op, parse_params(params))
        config = cc.default_config(w, target)
        ins = cc.random_inputs(w, 0)
        outs = [np.zeros(s.shape, dtype=s.dtype) for s in cc.get_op(w.op).output_specs(w)]
        kernels = {}
        knob = "half_io" in config
        variants = ("cast", "bits", "staged") if knob else ("cast", "bits")
        for name in variants:
            cgen.CCodegen.render = rendering(None if knob else name == "bits")
            kernels[name] = cc.build(w, dict(config, half_io=name, col_tile=min(config["col_tile"], 1024))
                                     if knob else config, target)
            kernels[name](*ins, *outs)
            assert cc.verify(w, outs, cc.expect(w, ins)).ok, name
        cgen.CCodegen.render = RENDER
        ratios = {n: [] for n in variants[1:]}
        for r in range(5):
            times = {}
            order = list(variants[r % len(variants):] + variants[:r % len(variants)])
            for n in order:
                time.sleep(0.05)
                times[n] = timed(kernels[n], ins, outs)
            for n in ratios:
                ratios[n].append(times["cast"] / times[n])
        text = "  ".join(f"cast/{n} {statistics.median(v):.2f} [{min(v):.2f}, {max(v):.2f}]" for n, v in ratios.items())
        ms = "  ".join(f"{n} {t / 1e6:.3f} ms" for n, t in times.items())
        print(f"{w.key}  {text}  ({ms}, last round)", flush=True)


if __name__ == "__main__":
    main()
