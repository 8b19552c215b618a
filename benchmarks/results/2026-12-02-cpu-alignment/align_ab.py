"""One kernel (the default config of each case), three placements of the same inputs and outputs: where numpy puts
them (malloc's 16-byte alignment: a large array starts 16 bytes past a 64-byte line, as glibc's mmap'd chunks do),
64-byte aligned (as PyTorch allocates), and 64-byte aligned plus 16 bytes (numpy's placement, made certain). Per ISA
in $ISAS (default "avx512 avx2"), 7 interleaved rounds, 2 threads; prints each placement's time over numpy's (< 1:
faster). Nothing is asserted about time.

    PYTHONPATH=. python3 benchmarks/results/2026-12-02-cpu-alignment/align_ab.py [case ...]
"""
from __future__ import annotations

import os
import statistics
import sys

import numpy as np

import benchmarks.two_threads  # noqa: F401  (the OpenMP threads, before a kernel loads libgomp)
import compiler_core as cc
from benchmarks.cpu_ab import case_workload, interleaved_ns, per_round, spread

CASES = ["layernorm:rows=1024,cols=4096", "softmax:rows=1024,cols=4096",
         "elementwise:rows=1024,cols=4096,expr=gelu(x*w+b),vectors=b,w", "matmul:M=512,N=512,K=512",
         "attention:heads=8,seq_q=512,seq_kv=512,head_dim=64"]


def placed(a: np.ndarray, shift: int | None) -> np.ndarray:
    """A copy of `a` as numpy allocates it (shift None), or starting `shift` bytes past a 64-byte boundary."""
    if shift is None:
        return np.array(a)
    raw = np.empty(a.nbytes + 128, dtype=np.uint8)
    start = (-raw.ctypes.data) % 64 + shift
    out = raw[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def main() -> None:
    for isa in os.environ.get("ISAS", "avx512 avx2").split():
        target = cc.cpu_target(isa=isa, cores=2)
        print(f"{target.arch}, 2 threads, 7 interleaved rounds", flush=True)
        for case in sys.argv[1:] or CASES:
            w = case_workload(case)
            kernel = cc.build(w, cc.default_config(w, target), target)
            inputs = cc.random_inputs(w, 0)
            outputs = [np.zeros(s.shape, s.dtype) for s in cc.get_op(w.op).output_specs(w)]
            runs, where = {}, {}
            for name, shift in (("numpy", None), ("64", 0), ("64+16", 16)):
                ins, outs = [placed(x, shift) for x in inputs], [placed(o, shift) for o in outputs]
                kernel(*ins, *outs)
                assert cc.verify(w, outs, cc.expect(w, ins)).ok
                runs[name] = lambda k=kernel, i=ins, o=outs: k(*i, *o)
                where[name] = sorted({x.ctypes.data % 64 for x in ins + outs})
            times = interleaved_ns(runs, rounds=7)
            cells = "  ".join(f"{n} (offsets {where[n]}) {statistics.median(times[n]) / 1e6:.3f} ms, /numpy "
                              f"{spread(per_round(times, n, 'numpy'))[0]:.2f}" for n in runs)
            print(f"  {w.key}  {cells}", flush=True)


if __name__ == "__main__":
    main()
