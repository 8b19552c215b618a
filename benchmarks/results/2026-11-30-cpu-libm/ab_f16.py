"""A/B of scalar float16 loads and stores: _Float16 casts (as before 2026-11-30) against the conversions on the bits
(c_half.F16_HELPERS), kernels of each built in one process and timed in interleaved rounds (benchmarks/cpu_ab.py).
Where the default config has the elementwise template's `half_io` (float16 on an ISA with F16C), each of its choices
(cast, bits, staged); elsewhere the C backend's `f16_bits` off (casts: without F16C, libgcc calls) and on (what it
renders without F16C).

    ISA=avx2 PYTHONPATH=. python3 benchmarks/results/2026-11-30-cpu-libm/ab_f16.py \
        "elementwise:rows=1024,cols=4096,expr=tanh(x),dtype=float16"

Prints, per case, the casts' time / each other variant's: median [min, max] of 5 rounds (> 1: faster than casts).
"""
from functools import partial
from unittest.mock import patch

import compiler_core as cc
from benchmarks.cpu_ab import ab_main
from compiler_core.codegen import c as cgen

RENDER = cgen.CCodegen.render


def built_with(w, config, target, f16_bits):
    """The kernel, its codegen's f16_bits forced (None: as the target has it)."""
    def render(self, module):
        self.f16_bits = self.f16_bits if f16_bits is None else f16_bits
        return RENDER(self, module)

    with patch.object(cgen.CCodegen, "render", render):
        return cc.build(w, config, target)


def variants(w, config, target) -> dict:
    choices = {k.name: k.choices for k in cc.get_space(w, target).knobs}.get("half_io", ())
    if "cast" in choices:
        staged_tile = min(config["col_tile"], 1024)
        return {v: partial(built_with, w, dict(config, half_io=v, col_tile=staged_tile), target, None)
                for v in ("cast", "bits", "staged")}
    # no cast to choose (float32, or float16 without F16C): the config as stored before the knob, whose loads and
    # stores convert as the C backend's f16_bits says
    config = {k: v for k, v in config.items() if k != "half_io"}
    return {"cast": partial(built_with, w, config, target, False), "bits": partial(built_with, w, config, target, True)}


def main() -> None:
    ab_main(variants, base="cast")

if __name__ == "__main__":
    main()
