"""A/B of the C backend's large heap buffers: 64-byte aligned on 4 KiB pages (before) against 2 MiB-aligned and marked
for transparent huge pages (now: codegen/c.py HUGE_PAGE_BYTES), on GEMMs whose B is packed (benchmarks/cpu_ab.py:
built, checked, interleaved rounds). bfloat16 cases use the pairs where the target has them.

    PYTHONPATH=. python3 benchmarks/results/2026-11-30-cpu-gemm-few-rows/huge_pages.py "matmul:M=1024,N=4096,K=4096"

Prints time before / now, and before / huge pages only from 32 MiB (glibc's largest mmap threshold): median [min,
max] of 3 rounds (> 1: faster than before).
"""
from unittest.mock import patch

import compiler_core as cc
from benchmarks.cpu_ab import ab_main
from compiler_core.codegen import c as c_codegen


def variants(w, config, target) -> dict:
    packed = dict(config) if w.op == "conv2d" else \
        dict(config, b_source="packed", **({"dot": "bf16"} if "dot" in config else {}))  # conv2d: its default

    def from_size(min_bytes: int):
        def build():
            with patch.object(c_codegen, "HUGE_PAGE_MIN_BYTES", min_bytes):
                return cc.build(w, packed, target)
        return build
    return {"before": from_size(1 << 62), "now": lambda: cc.build(w, packed, target), "from_32MiB": from_size(32 << 20)}


if __name__ == "__main__":
    ab_main(variants, base="before", rounds=3)
