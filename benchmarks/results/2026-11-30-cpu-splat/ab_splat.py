"""A/B of the C backend's broadcast renderings: kernels of each built in one process, timed in interleaved rounds.

    ISA=avx2 PYTHONPATH=. python3 benchmarks/results/2026-11-30-cpu-splat/ab_splat.py "matmul:M=512,N=512,K=512"

Prints, per case, old time / time of each rendering: median [min, max] of 5 rounds (> 1: faster than the old
`{0} + x`; benchmarks/cpu_ab.py times them).
"""
import sys
from functools import partial
from pathlib import Path
from unittest.mock import patch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from variant import splat_init  # noqa: E402

import compiler_core as cc  # noqa: E402
from benchmarks.cpu_ab import ab_main  # noqa: E402
from compiler_core.codegen import c as cgen  # noqa: E402

FORMS = {"old": lambda self, e: f"(({self.type_of(e.dtype)}){{0}} + ({self.expr(e.value)}))",
         "sub": lambda self, e: f"(({self.expr(e.value)}) - ({self.type_of(e.dtype)}){{0}})",
         "init": splat_init}


def built_with(w, config, target, cls, form):
    with patch.object(cls, "expr_Broadcast", form):
        return cc.build(w, config, target)


def main() -> None:
    cls = next(v for v in vars(cgen).values() if isinstance(v, type) and "expr_Broadcast" in vars(v))
    ab_main(lambda w, config, target: {name: partial(built_with, w, config, target, cls, form)
                                       for name, form in FORMS.items()}, base="old")

if __name__ == "__main__":
    main()
