"""Correct CPU kernels pass on every input set: the default config and seeded random valid configs of each
template, on the random and the hard inputs. A failure here means the error model or the template is wrong."""
from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import pytest

import compiler_core as cc

TARGET = cc.cpu_target(cores=2)
RANDOM_CONFIGS = 5
CASES = [
    ("matmul", dict(M=67, N=131, K=45)),
    ("matmul", dict(M=67, N=131, K=45, dtype="float16")),
    ("matmul", dict(M=64, N=96, K=1000)),
    ("batch_matmul", dict(batch=3, M=17, N=33, K=45)),
    ("batch_matmul", dict(batch=2, M=9, N=20, K=70, dtype="float16")),
    ("conv2d", dict(N=2, C=3, H=9, W=11, K=5, R=3, S=3, stride=2, pad=1)),
    ("conv2d", dict(N=1, C=16, H=14, W=14, K=32, R=3, S=3, pad=1)),
    ("softmax", dict(rows=7, cols=1003)),
    ("softmax", dict(rows=9, cols=100003)),
    ("layernorm", dict(rows=13, cols=1003)),
    ("layernorm", dict(rows=7, cols=4097, eps="1e-12")),
    ("reduce_sum", dict(rows=7, cols=1003)),
    ("reduce_sum", dict(rows=7, cols=100003)),
    ("transpose", dict(rows=67, cols=131)),
    ("elementwise", dict(rows=20, cols=131, expr="gelu(x*w+b)", vectors="w,b")),
    ("elementwise", dict(rows=20, cols=67, expr="sigmoid(x)-tanh(y)/2+max(x,y)")),
    ("elementwise", dict(rows=20, cols=67, expr="relu(a+b)*c-exp(a)/(1+abs(b))+sqrt(abs(c))*log(1+a*a)")),
]


def _configs(w) -> list[dict]:
    space = cc.get_space(w, TARGET)
    return [cc.default_config(w, TARGET), *space.sample(random.Random(w.key), RANDOM_CONFIGS)]


def _failures(w, config, checks) -> list:
    kernel = cc.build(w, config, TARGET)
    out = []
    for name, inputs, expected in checks:
        result = cc.verify(w, kernel.run(*inputs), expected)
        if not result.ok:
            out.append((name, config, result.message))
    return out


@pytest.mark.parametrize("op,params", CASES, ids=[f"{op}-{'-'.join(map(str, p.values()))}" for op, p in CASES])
def test_default_and_random_configs_pass_every_input_set(op, params):
    w = cc.make_workload(op, params)
    checks = [(s.name, s.arrays, cc.expect(w, s.arrays)) for s in cc.input_sets(w, seed=11)]
    with ThreadPoolExecutor(max_workers=2) as pool:  # gcc runs in subprocesses: two compile at once
        failures = [f for fs in pool.map(lambda c: _failures(w, c, checks), _configs(w)) for f in fs]
    assert not failures, f"{len(failures)} wrong, first: {failures[0]}"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_inputs_come_back_from_the_agents_disk_cache_with_their_dtype(tmp_path, dtype):
    """.npz stores bfloat16 as raw 2-byte records ('|V2'): the cache must give the arrays their dtype back."""
    import numpy as np

    from compiler_core.dtypes import numpy_dtype
    from device_agent.workload_data import WorkloadCache

    w = cc.make_workload("layernorm", rows=5, cols=33, dtype=dtype)
    first = WorkloadCache(tmp_path).get(w, 3)
    again = WorkloadCache(tmp_path).get(w, 3)  # a new worker: inputs and expectations from disk
    assert [s.name for s in again.sets] == [s.name for s in first.sets]
    for a, b in zip(first.sets, again.sets, strict=True):
        assert all(x.dtype == numpy_dtype(dtype) for x in b.inputs)
        pairs = zip(a.inputs, b.inputs, strict=True)
        assert all(np.array_equal(x.view(np.uint16), y.view(np.uint16)) for x, y in pairs)
        assert all(np.array_equal(x, y) for x, y in zip(a.expected.tolerance, b.expected.tolerance, strict=True))
