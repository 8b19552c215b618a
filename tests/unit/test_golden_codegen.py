"""Golden files: the generated source of a fixed set of (workload, config, target) is pinned; drift must be intended.

Regenerate after an intended codegen change with:  python3 -m pytest tests/unit/test_golden_codegen.py --update-golden
"""
from __future__ import annotations

from pathlib import Path

import pytest

import compiler_core as cc

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden"

CASES = [
    ("matmul_f32", "matmul", dict(M=67, N=131, K=45)),
    ("matmul_f16", "matmul", dict(M=64, N=64, K=64, dtype="float16")),
    ("batch_matmul", "batch_matmul", dict(batch=2, M=32, N=32, K=32)),
    ("conv2d", "conv2d", dict(N=2, C=3, H=9, W=11, K=5, R=3, S=3, stride=2, pad=1)),  # the batch folded
    ("conv2d_one_image", "conv2d", dict(N=1, C=3, H=9, W=11, K=5, R=3, S=3, stride=2, pad=1)),  # the padded path
    ("softmax", "softmax", dict(rows=1000, cols=333)),
    ("layernorm", "layernorm", dict(rows=64, cols=128)),
    ("reduce_sum", "reduce_sum", dict(rows=64, cols=128)),
    ("transpose", "transpose", dict(rows=333, cols=1000)),
    ("elementwise", "elementwise", dict(rows=64, cols=128, expr="gelu(x*w+b)", vectors="w,b")),
]
# Golden C must not depend on the host: the C files are generated for AVX2 (8 float lanes), whatever the host runs.
TARGETS = {"c": cc.cpu_target(isa="avx2", cores=2), "cuda": cc.cuda_target("sm_90")}


@pytest.mark.parametrize("kind", ["c", "cuda"])
@pytest.mark.parametrize("name,op,params", CASES, ids=[c[0] for c in CASES])
def test_generated_source_matches_golden(name, op, params, kind, request):
    target = TARGETS[kind]
    w = cc.make_workload(op, params)
    source = cc.generate(w, cc.default_config(w, target), target)
    path = GOLDEN_DIR / f"{name}.{'cu' if kind == 'cuda' else 'c'}"
    if request.config.getoption("--update-golden"):
        path.write_text(source)
    assert path.exists(), f"no golden file {path.name}: run with --update-golden"
    assert source == path.read_text(), f"generated {kind} source for {w.key} drifted from {path.name}"
