"""Run a workload's configs on the GPU through cc.build and collect those that miss the float64 numpy reference:
outputs poisoned with NaN before each run (an unwritten element fails)."""
from __future__ import annotations

import numpy as np

import compiler_core as cc
from compiler_core.dtypes import numpy_dtype


def failures(w, target, configs, seed: int) -> list:
    """[(config, verification message)] of the configs whose outputs fail verification."""
    inputs = cc.random_inputs(w, seed=seed)
    expected = cc.expect(w, inputs)
    specs = cc.get_op(w.op).tensor_specs(w)[len(inputs):]
    out = []
    for config in configs:
        kernel = cc.build(w, config, target)
        outs = [np.full(s.shape, np.nan, dtype=numpy_dtype(s.dtype)) for s in specs]
        kernel(*inputs, *outs)
        result = cc.verify(w, outs, expected)
        if not result.ok:
            out.append((config, result.message))
    return out
