"""Build a workload's configs for the GPU and collect those that miss the float64 numpy reference: outputs poisoned
with NaN before each run (an unwritten element fails)."""
from __future__ import annotations

import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import compiler_core as cc
from compiler_core.build import build_module
from compiler_core.codegen import generate_source
from compiler_core.dtypes import numpy_dtype
from compiler_core.runtime.nvcc_check import nvcc_compile


def built_kernels(w, configs: list[dict], target) -> list:
    """Each config's kernel through the farm's build path (cc.lower, nvcc, build_module), compiled in parallel."""
    modules = [cc.lower(w, c, target) for c in configs]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        cubins = list(pool.map(lambda m: nvcc_compile(generate_source(m, target), target.arch), modules))
    return [build_module(w, m, target, c, cubin=cubin) for c, m, cubin in zip(configs, modules, cubins, strict=True)]


def verified_failures(w, configs: list[dict], kernels: Iterable, seed: int) -> list:
    """[(config, verification message)] of the configs whose kernel's outputs fail verification."""
    return failures_on(w, configs, kernels, cc.random_inputs(w, seed=seed))


def failures_on(w, configs: list[dict], kernels: Iterable, inputs: list) -> list:
    """`verified_failures` on the given input arrays (e.g. one of the verifier's input sets)."""
    expected = cc.expect(w, inputs)
    specs = cc.get_op(w.op).tensor_specs(w)[len(inputs):]
    out = []
    for config, kernel in zip(configs, kernels, strict=True):
        outs = [np.full(s.shape, np.nan, dtype=numpy_dtype(s.dtype)) for s in specs]
        kernel(*inputs, *outs)
        result = cc.verify(w, outs, expected)
        if not result.ok:
            out.append((config, result.message))
    return out


def failures(w, target, configs, seed: int) -> list:
    """`verified_failures` of the configs built one at a time through cc.build."""
    return verified_failures(w, configs, (cc.build(w, c, target) for c in configs), seed)
