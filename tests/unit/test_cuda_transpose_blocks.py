"""Every config of the CUDA transpose template, lowered as the farm lowers it, run block by block in numpy
(tests/ir_blocks.py) on ragged shapes: its index arithmetic and edge guards move every element exactly once. The
gpu tier times and checks the compiled kernel; this catches a wrong index on any CI host."""
from __future__ import annotations

import numpy as np
import pytest

import compiler_core as cc
from tests.ir_blocks import run_blocks

TARGET = cc.cuda_target("sm_80", sm_count=108)
SHAPES = [(33, 70), (64, 64), (5, 129), (100, 1)]


@pytest.mark.parametrize("rows, cols", SHAPES, ids=lambda s: str(s))
def test_every_config_transposes_ragged_matrices(rows, cols):
    w = cc.make_workload("transpose", dict(rows=rows, cols=cols, dtype="float32"))
    x = np.arange(rows * cols, dtype=np.float64)
    expected = x.reshape(rows, cols).T.ravel()
    configs = list(cc.get_space(w, TARGET))
    assert configs
    for config in configs:
        [func] = cc.lower(w, config, TARGET).kernels
        out = run_blocks(func, {"in_X": x}, {"out_Y": x.size})["out_Y"]
        assert np.array_equal(out, expected), config
