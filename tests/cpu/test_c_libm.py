"""The C backend's inline float32 exp, log, tanh and erf: within the error model's budget on every ISA this host
runs (a strided sweep of all float32 bit patterns, special values exactly), caught when a coefficient is wrong,
called by generated kernels in place of libm (so the loop vectorizes), and PyTorch's reference for the chains."""
from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

import compiler_core as cc
from benchmarks import libm_accuracy
from compiler_core.codegen import c_libm
from compiler_core.runtime.c_runtime import compile_shared_library
from compiler_core.target import host_isas

ISAS = [isa for isa in ("sse", "avx2", "avx512") if isa in host_isas()]
SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-45, -1e-45, 1e-40, 1.17549435e-38, 0.5,
                     0.625, 0.875, 3.9, 4.0, 10.0, -10.0, 88.0, 88.72, 89.0, -87.0, -104.0, 3.4e38, -3.4e38],
                    dtype=np.float32)


@pytest.mark.parametrize("isa", ISAS)
def test_every_function_is_within_its_budget_on_a_sweep_of_all_floats(isa):
    for name, r in libm_accuracy.check(isa, stride=65_537).items():
        assert r["checked"] > 65_000
        assert r["mismatches"] == 0, f"{isa} {name}: special value wrong at {r['first_mismatch']!r}"
        assert r["worst_u"] <= r["budget_u"], f"{isa} {name}: {r['worst_u']:.2f} u at {r['worst_input']!r}"


@pytest.mark.parametrize("isa", ISAS)
def test_special_values_match_the_double_reference(isa):
    for bits in SPECIALS.view(np.uint32):
        for name, r in libm_accuracy.check(isa, stride=1, start=int(bits), end=int(bits) + 1).items():
            x = np.uint32(bits).view(np.float32)
            assert r["mismatches"] == 0 and r["worst_u"] <= r["budget_u"], f"{isa} {name}({x!r}): {r}"


def test_a_wrong_coefficient_is_caught(monkeypatch):
    # the harness must fail a function whose polynomial is off in its fourth digit: each table, one at a time
    for table, name in (("LOG_P", "log"), ("TANH_P", "tanh"), ("ERF_P", "erf"), ("ERF_M", "erf")):
        coeffs = getattr(c_libm, table)
        with monkeypatch.context() as m:
            m.setattr(c_libm, table, (*coeffs[:2], coeffs[2] * 1.001, *coeffs[3:]))
            r = libm_accuracy.check(ISAS[0], stride=65_537, names=(name,))[name]
        assert r["worst_u"] > r["budget_u"], f"{table} perturbed went unnoticed: {r}"


@pytest.mark.parametrize("expr", ["tanh(x*w+b)", "log(x)", "gelu(x)", "silu(x)-exp(x)"])
def test_generated_chains_call_no_libm_function(expr):
    # glibc's calls keep the loop scalar: the kernel's library must not import them
    w = cc.make_workload("elementwise", {"rows": 8, "cols": 256, "expr": expr})
    target = cc.cpu_target()
    library = compile_shared_library(cc.generate(w, cc.default_config(w, target), target))
    imported = subprocess.run(["nm", "-D", "--undefined-only", str(library)], capture_output=True, text=True,
                              check=True).stdout
    assert not re.search(r"\b(expf|logf|tanhf|erff)\b", imported), imported


def test_pytorch_reference_of_a_chain_matches_the_op():
    torch = pytest.importorskip("torch")
    from device_agent.baselines import torch_op

    w = cc.make_workload("elementwise", {"rows": 33, "cols": 65, "vectors": "w,b",
                                         "expr": "max(x,0.5)*gelu(x*w+b)-min(w,1)/rsqrt(abs(b)+1)+exp(2)*erf(x)"})
    inputs = cc.random_inputs(w, seed=3)
    got = torch_op(w, torch, [torch.from_numpy(np.ascontiguousarray(a)) for a in inputs])().numpy()
    assert cc.verify(w, [got], cc.expect(w, inputs)).ok
