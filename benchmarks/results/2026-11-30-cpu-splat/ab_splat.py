"""A/B of the C backend's broadcast renderings: kernels of each built in one process, timed in interleaved rounds.

    ISA=avx2 PYTHONPATH=. python3 benchmarks/results/2026-11-30-cpu-splat/ab_splat.py "matmul:M=512,N=512,K=512"

Prints, per case, old time / time of each rendering (median of 5 rounds; > 1: faster than the old `{0} + x`).
"""
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from variant import splat_init  # noqa: E402

import compiler_core as cc  # noqa: E402
from benchmarks.cpu_matmul import median_ns  # noqa: E402
from compiler_core.codegen import c as cgen  # noqa: E402
from compiler_core.workload import parse_params  # noqa: E402

FORMS = {"old": lambda self, e: f"(({self.type_of(e.dtype)}){{0}} + ({self.expr(e.value)}))",
         "sub": lambda self, e: f"(({self.expr(e.value)}) - ({self.type_of(e.dtype)}){{0}})",
         "init": splat_init}


def timed(kernel, ins, outs) -> float:
    return median_ns(lambda: kernel(*ins, *outs), min_runs=3, min_seconds=0.2, warmup=1)


def main() -> None:
    target = cc.cpu_target(isa=os.environ["ISA"]) if os.environ.get("ISA") else cc.cpu_target()
    cls = next(v for v in vars(cgen).values() if isinstance(v, type) and "expr_Broadcast" in vars(v))
    for case in sys.argv[1:]:
        op, _, params = case.partition(":")
        w = cc.make_workload(op, parse_params(params))
        config = cc.default_config(w, target)
        ins = cc.random_inputs(w, 0)
        outs = [np.zeros(s.shape, dtype=s.dtype) for s in cc.get_op(w.op).output_specs(w)]
        kernels = {}
        for name, form in FORMS.items():
            cls.expr_Broadcast = form
            kernels[name] = cc.build(w, config, target)
            kernels[name](*ins, *outs)
            assert cc.verify(w, outs, cc.expect(w, ins)).ok, name
        names, ratios = list(kernels), {n: [] for n in kernels}
        for r in range(5):
            times = {}
            for n in names[r % 3:] + names[:r % 3]:
                time.sleep(0.05)
                times[n] = timed(kernels[n], ins, outs)
            for n in names:
                ratios[n].append(times["old"] / times[n])
        print(w.key, {n: round(statistics.median(v), 3) for n, v in ratios.items()}, flush=True)


if __name__ == "__main__":
    main()
