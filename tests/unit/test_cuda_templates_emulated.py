"""The CUDA loop-IR templates computed on CPU: each op's default and a seeded sample of its space, lowered as the
farm lowers them for an sm_80 target, run block by block in numpy by tests/ir_blocks.py (a test double for the
device) and compared with the op's reference on ragged shapes. A wrong index, guard, split-K sum, warp shuffle or
WMMA fragment offset in a template fails here on any CI host; the gpu tier checks the compiled kernels themselves.
Kernels a template renders as CUDA text (OpaqueKernel: the Hopper, mma.sync and tiled attention engines) are left to
the gpu tier."""
from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

import compiler_core as cc
from compiler_core.ir import stmt as S
from tests.ir_blocks import run_module

TARGET = cc.cuda_target("sm_80", sm_count=108)
SAMPLE = 8  # configs of each space beside the default
CASES = [  # (op, params, dtype)
    ("matmul", dict(M=33, N=70, K=19), "float32"),
    ("batch_matmul", dict(batch=3, M=17, N=40, K=9), "float32"),
    ("conv2d", dict(N=2, C=3, H=7, W=6, K=5, R=3, S=3, stride=1, pad=1), "float32"),
    ("conv2d", dict(N=1, C=4, H=9, W=9, K=6, R=3, S=3, stride=2, pad=0), "float32"),
    ("softmax", dict(rows=5, cols=100), "float32"),
    ("softmax", dict(rows=3, cols=300), "float16"),
    ("layernorm", dict(rows=5, cols=100), "float32"),
    ("layernorm", dict(rows=4, cols=70), "bfloat16"),
    ("reduce_sum", dict(rows=5, cols=100), "float32"),
    ("reduce_sum", dict(rows=7, cols=33), "float16"),
    ("transpose", dict(rows=33, cols=70), "float32"),
    ("attention", dict(heads=2, seq_q=9, seq_kv=37, head_dim=16, causal=1), "float32"),
    ("matmul", dict(M=20, N=40, K=40), "float16"),  # WMMA from here on: fragments, cp.async
    ("matmul", dict(M=33, N=17, K=40), "bfloat16"),
    ("batch_matmul", dict(batch=2, M=17, N=24, K=40), "float16"),
    ("conv2d", dict(N=2, C=8, H=7, W=6, K=5, R=3, S=3, stride=1, pad=1), "float16"),  # NHWC copies
    ("conv2d", dict(N=1, C=5, H=9, W=9, K=6, R=3, S=3, stride=2, pad=0), "bfloat16"),  # B gathered
    ("attention", dict(heads=2, seq_q=9, seq_kv=37, head_dim=16, causal=1), "float16"),  # SIMT and WMMA engines
    ("attention", dict(heads=2, seq_q=1, seq_kv=70, head_dim=32, causal=0), "bfloat16"),
    ("elementwise", dict(rows=7, cols=45, expr="gelu(x*w+b)", vectors="b"), "float32"),
    ("elementwise", dict(rows=3, cols=130, expr="exp(x)-silu(y)"), "float16"),
]
# The double runs in float64 and does not round stores to the half types, so half cases compare more loosely.
TOLERANCE = {"float32": 1e-5, "float16": 1e-2, "bfloat16": 2e-2}


def configs(w) -> list[dict]:
    """The default and SAMPLE seeded configs whose modules are loop IR only; where the space unites several engines
    (attention), the sample takes from each loop-IR engine in turn."""
    space = cc.get_space(w, TARGET)
    union = "engine" in space.names
    loop_ir = [c for c in space.sample(random.Random(1), 8 * SAMPLE if union else SAMPLE)
               if all(isinstance(k, S.PrimFunc) for k in cc.lower(w, c, TARGET).kernels)]
    by_engine: dict = {}
    for c in loop_ir:
        by_engine.setdefault(c.get("engine"), []).append(c)
    picked = [c for group in zip(*by_engine.values(), strict=False) for c in group] if union else loop_ir
    picked += [c for c in loop_ir if c not in picked]
    default = cc.default_config(w, TARGET)
    keep_default = all(isinstance(k, S.PrimFunc) for k in cc.lower(w, default, TARGET).kernels)
    return ([default] if keep_default else []) + picked[:SAMPLE]


@pytest.mark.parametrize("op, params, dtype", CASES,
                         ids=lambda x: x if isinstance(x, str) else "-".join(map(str, x.values())))
def test_the_templates_configs_compute_the_op(op, params, dtype):
    w = cc.make_workload(op, dict(params, dtype=dtype))
    inputs = cc.random_inputs(w, 0)
    expected = cc.reference(w, inputs)
    tried = configs(w)
    assert tried, "no loop-IR config to run"
    for config in tried:
        with warnings.catch_warnings():  # masked-off threads compute on NaN padding: their results are never stored
            warnings.simplefilter("ignore", RuntimeWarning)
            outputs = run_module(cc.lower(w, config, TARGET), [np.asarray(a).astype(np.float64) for a in inputs])
        for got, want in zip(outputs, expected, strict=True):
            want = np.asarray(want).astype(np.float64).ravel()
            scale = max(float(np.abs(want).max()), 1e-30)
            assert np.abs(got[:want.size] - want).max() / scale < TOLERANCE[dtype], config
