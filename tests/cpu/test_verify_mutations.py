"""Mutation suite on CPU: verify passes the exact kernels (each template's default config) on every input set
and catches planted faults, both numpy transforms of correct outputs and compiled kernels with a planted bug."""
from __future__ import annotations

import dataclasses
import re
from functools import cache

import numpy as np
import pytest

import compiler_core as cc
from compiler_core.runtime.c_runtime import CLibrary, compile_shared_library
from tests.verify_mutations import CASES, FAULTS, HALF, SEED, workload

TARGET = cc.cpu_target(cores=2)


@cache
def _checked(case: str):
    """(name, inputs, expected, default-config outputs) for each input set of the case."""
    w = workload(case)
    kernel = cc.build(w, cc.default_config(w, TARGET), TARGET)
    return [(s.name, s.arrays, cc.expect(w, s.arrays), kernel.run(*s.arrays)) for s in cc.input_sets(w, SEED)]


@pytest.mark.parametrize("case", list(CASES))
def test_exact_kernel_passes_every_input_set(case):
    for name, _, expected, outputs in _checked(case):
        result = cc.verify(workload(case), outputs, expected)
        assert result.ok, f"{case} on {name}: {result.message}"


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("case", list(CASES))
def test_planted_fault_is_caught(case, fault):
    w = workload(case)
    caught = []
    for name, inputs, expected, outputs in _checked(case):
        planted = [FAULTS[fault](w, inputs, outputs[0]), *outputs[1:]]
        if not cc.verify(w, planted, expected).ok:
            caught.append(name)
    assert caught, f"{fault} on {case} passed every input set"


# ---- compiled mutants: the default (or a named) config's C source with one planted bug -----------------
def _decrement_nth_bound(loop_prefix: str, nth: int):
    """The nth loop over `loop_prefix<N>` runs one iteration short (drops a term or the row's last column)."""
    def edit(source: str) -> str:
        loops = list(re.finditer(rf"for \(int ({loop_prefix}\d+) = 0; \1 < (\d+); ", source))
        m = loops[nth]
        return source[:m.start(2)] + str(int(m.group(2)) - 1) + source[m.end(2):]
    return edit


def _drop_last_k(K: int, pairs: int | None = None):
    """The GEMM microkernel's reduction loop stops one step short: over K steps (p) or, with bfloat16 pair dot
    products, over ceil(K / 2) pairs (p2; `pairs` where the operand pads otherwise: conv2d's padded path pairs
    channels, ceil(C / 2) * R * S), which drops the last K; on AMX's tiles (the default for bfloat16 where the host
    has them) over ceil(K / 32) tiles, which drops the last tile's K steps."""
    def edit(source: str) -> str:
        for loop, n in (("p", K), ("p2", (K + 1) // 2 if pairs is None else pairs)):
            edited, count = re.subn(rf"\b{loop} < {n}; \+\+{loop}\)", f"{loop} < {n - 1}; ++{loop})", source)
            if count:
                return edited
        tiles = -(-K // 32)
        edited, count = re.subn(rf"(tf_amx_tile_\dx\d\([^;]*), {tiles}\);", rf"\1, {tiles - 1});", source)
        if count:
            return edited
        raise AssertionError(f"no reduction loop over {K} steps, {(K + 1) // 2} pairs or {tiles} tiles in the "
                             "generated source")
    return edit


def _replace(pattern: str, replacement: str):
    def edit(source: str) -> str:
        edited, count = re.subn(pattern, replacement, source)
        assert count, f"mutation pattern {pattern!r} not in the generated source"
        return edited
    return edit


ROW = {"rows_per_task": 1, "vector": "explicit", "accumulators": 2}
MUTANTS = {
    # GEMM family: the microkernel's k loop stops at K-1 (packing and the rest unchanged)
    "matmul_f32: k loop drops k=K-1": ("matmul_f32", None, _replace(r"p < 45; \+\+p\)", "p < 44; ++p)")),
    "matmul_f16: k loop drops k=K-1": ("matmul_f16", None, _replace(r"p < 45; \+\+p\)", "p < 44; ++p)")),
    "batch_matmul: k loop drops k=K-1": ("batch_matmul", None, _replace(r"p < 45; \+\+p\)", "p < 44; ++p)")),
    "conv2d: reduction drops the last (c, r, s) tap": ("conv2d", None, _replace(r"p < 27; \+\+p\)", "p < 26; ++p)")),
    # softmax: the exp-sum pass's scalar tail skips the last column (the denominator misses a term)
    "softmax: denominator misses the last column": (
        "softmax_long", {**ROW, "stats": "two_pass", "store_exp": 0}, _decrement_nth_bound("jt", 1)),
    # layernorm: no shift (the old two_pass: wrong on constant and offset rows), and a mean missing a term
    "layernorm: statistics unshifted": ("layernorm", None, _replace(r"const float shift = [^;]+;",
                                                                     "const float shift = 0.0f;")),
    "layernorm: mean misses the last column": ("layernorm", None, _decrement_nth_bound("jt", 0)),
    "reduce_sum: the last column is skipped": ("reduce_sum_long", {**ROW, "split": 1}, _decrement_nth_bound("jt", 0)),
    "transpose: the last row read twice": ("transpose", None, _replace(r"in_X\[\(\(\(i0 \+ ii\) \* ",
                                                                       "in_X[(((i0 + ii - (i0 + ii == 66)) * ")),
    "elementwise: gelu's 0.5 off by 1e-3": ("elementwise", None, _replace(r"\b0\.5f", "0.5005f")),
}
# The same bugs in the half dtypes (conversions at loads and stores, float32 math): a planted error must still
# show past the output's own rounding, so gelu's constant is off by 4e-2 there (bfloat16's u is 4e-3).
for _short in HALF.values():
    MUTANTS.update({
        f"matmul_{_short}: k loop drops k=K-1": (f"matmul_{_short}", None, _drop_last_k(45)),
        f"batch_matmul_{_short}: k loop drops k=K-1": (f"batch_matmul_{_short}", None, _drop_last_k(45)),
        f"conv2d_{_short}: reduction drops the last tap": (f"conv2d_{_short}", None, _drop_last_k(27, pairs=18)),
        f"softmax_{_short}: denominator misses the last column": (
            f"softmax_{_short}", {**ROW, "stats": "two_pass", "store_exp": 0}, _decrement_nth_bound("jt", 1)),
        f"layernorm_{_short}: mean misses the last column": (f"layernorm_{_short}", None,
                                                               _decrement_nth_bound("jt", 0)),
        f"reduce_sum_{_short}: the last column is skipped": (f"reduce_sum_{_short}", {**ROW, "split": 1},
                                                               _decrement_nth_bound("jt", 0)),
        f"transpose_{_short}: the last row read twice": (
            f"transpose_{_short}", None,
            _replace(r"in_X\[\(\(\(i0 \+ ii\) \* ", "in_X[(((i0 + ii - (i0 + ii == 66)) * ")),
        f"elementwise_{_short}: gelu's 0.5 off by 4e-2": (f"elementwise_{_short}", None,
                                                           _replace(r"\b0\.5f", "0.52f")),
    })


@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_compiled_mutant_is_caught(mutant):
    case, config, edit = MUTANTS[mutant]
    w = workload(case)
    kernel = cc.build(w, config or cc.default_config(w, TARGET), TARGET)
    source = edit(kernel.source)
    assert source != kernel.source
    wrong = dataclasses.replace(kernel, source=source,
                                _impl=CLibrary(compile_shared_library(source), len(kernel.module.args)))
    caught = []
    for s in cc.input_sets(w, SEED):
        expected = cc.expect(w, s.arrays)
        assert cc.verify(w, kernel.run(*s.arrays), expected).ok, f"unmutated {case} fails on {s.name}"
        with np.errstate(all="ignore"):
            if not cc.verify(w, wrong.run(*s.arrays), expected).ok:
                caught.append(s.name)
    assert caught, f"{mutant} passed every input set"
