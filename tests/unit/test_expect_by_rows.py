"""Expectations of row-independent ops computed in blocks of rows on threads equal those computed in one piece,
bit for bit, on random and adversarial inputs; ops without independent rows are never split."""
from __future__ import annotations

import numpy as np
import pytest

import compiler_core as cc
from compiler_core import ops
from compiler_core.verify import PARALLEL_MIN_ELEMENTS

CASES = [("softmax", {"rows": 1031, "cols": 2053}), ("layernorm", {"rows": 1500, "cols": 1401, "eps": "1e-12"}),
         ("reduce_sum", {"rows": 4099, "cols": 513}), ("softmax", {"rows": 3, "cols": 700001}),
         ("attention", {"heads": 9, "seq_q": 300, "seq_kv": 400, "head_dim": 256, "causal": 1})]  # blocks of heads


@pytest.mark.parametrize("op,params", CASES, ids=[f"{o}-{'x'.join(map(str, p.values()))}" for o, p in CASES])
def test_blocks_of_rows_give_the_same_expectation(op, params):
    w = cc.make_workload(op, params)
    assert sum(a.size for a in cc.random_inputs(w)) >= PARALLEL_MIN_ELEMENTS  # or no split would happen
    for s in cc.input_sets(w, 5):
        whole, blocks = cc.expect(w, s.arrays, threads=1), cc.expect(w, s.arrays, threads=7)
        for a, b in zip(whole.outputs + whole.tolerance, blocks.outputs + blocks.tolerance, strict=True):
            assert np.array_equal(np.broadcast_to(a, b.shape), b, equal_nan=True), s.name


FOUR_ROWS = {"attention": {"heads": 4, "seq_q": 3, "seq_kv": 5, "head_dim": 2}}  # axis 0 of every tensor: 4


def test_only_ops_with_independent_rows_declare_it():
    for name, op in ops.OPS.items():
        if op.row_split:
            w = cc.make_workload(name, FOUR_ROWS.get(name, {"rows": 4, "cols": 8}))
            specs = op.input_specs(w)
            assert len(op.row_split) == len(specs)
            assert all(spec.shape[0] == 4 for spec, split in zip(specs, op.row_split, strict=True) if split)
            assert all(spec.shape[0] == 4 for spec in op.output_specs(w))
    assert not ops.OPS["transpose"].row_split and not ops.OPS["matmul"].row_split
