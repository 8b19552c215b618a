"""The CPU GEMM templates (matmul, batch_matmul, conv2d) compiled and checked against numpy on odd shapes."""
from __future__ import annotations

import random

import numpy as np
import pytest

import compiler_core as cc

TARGET = cc.cpu_target(cores=2)  # the host's ISA: these kernels run; tests/cpu/test_cpu_isa_builds.py covers the rest
V = TARGET.vector_lanes_f32  # nr is a number of B vectors times the lanes: 2 * V is a 2-vector microkernel
BASE = {"mr": 6, "nr": 2 * V, "mc": 48, "nc": 64 * 3, "kc": 32, "pack_a": 1, "order": "jr_ir", "parallel": "m"}
# Hand-picked configs: several kc blocks (K=45 > kc), partial mc/nc blocks, every microkernel order and
# both thread splits, A packed and read in place, the widest and narrowest microkernels. nc is a multiple of
# nr for 4-, 8- and 16-lane vectors alike.
VARIANTS = [
    {},
    {"parallel": "n", "order": "ir_jr"},
    {"pack_a": 0, "kc": 1024},
    {"mr": 2, "nr": 4 * V, "mc": 16, "nc": 64},
    {"mr": 4, "nr": 3 * V, "mc": 96, "nc": 96, "kc": 64, "parallel": "n"},
    {"mr": 8, "nr": V, "mc": 24, "nc": 128, "pack_a": 0, "order": "ir_jr"},
]

WORKLOADS = [
    ("matmul", {"M": 67, "N": 131, "K": 45}),
    ("matmul", {"M": 67, "N": 131, "K": 45, "dtype": "float16"}),
    ("matmul", {"M": 67, "N": 131, "K": 45, "dtype": "bfloat16"}),  # pairs where the host has AVX-512 BF16
    ("matmul", {"M": 64, "N": 64, "K": 64}),
    ("matmul", {"M": 3, "N": 1, "K": 1}),  # the second thread has no rows; one column
    ("batch_matmul", {"batch": 3, "M": 17, "N": 33, "K": 45}),
    ("batch_matmul", {"batch": 2, "M": 9, "N": 20, "K": 70, "dtype": "float16"}),
    # B read in place (b_source 'in_place': N a multiple of every nr): edge rows, several kc blocks, batches
    ("matmul", {"M": 67, "N": 192, "K": 300}),
    ("batch_matmul", {"batch": 3, "M": 17, "N": 192, "K": 70}),
    ("conv2d", {"N": 2, "C": 3, "H": 9, "W": 11, "K": 5, "R": 3, "S": 3, "stride": 2, "pad": 1}),
    ("conv2d", {"N": 1, "C": 16, "H": 14, "W": 14, "K": 32, "R": 3, "S": 3, "pad": 1}),
    ("conv2d", {"N": 2, "C": 8, "H": 7, "W": 7, "K": 4, "R": 1, "S": 1}),
    # im2col by runs (schedules/cpu/conv2d.py): padding wider than the taps (whole runs of zeros), stride 3
    ("conv2d", {"N": 3, "C": 5, "H": 6, "W": 5, "K": 7, "R": 5, "S": 3, "stride": 3, "pad": 4}),
    ("conv2d", {"N": 1, "C": 2, "H": 3, "W": 2, "K": 3, "R": 3, "S": 5, "pad": 2}),  # taps wider than the image
    # rows of 4 pixels: a panel's row of B spans many output rows; half inputs widened as they are copied
    ("conv2d", {"N": 2, "C": 3, "H": 13, "W": 4, "K": 6, "R": 3, "S": 3, "pad": 1, "dtype": "float16"}),
    # the padded image read in place (b_source 'padded', stride 1): one dropped column per output row, no padding
    # with three dropped, a 1-pixel-wide image in bfloat16 (the copy-out converts); the 1x1 conv above is the path
    # where the GEMM writes Y itself
    ("conv2d", {"N": 2, "C": 3, "H": 5, "W": 6, "K": 4, "R": 3, "S": 2, "pad": 1}),
    ("conv2d", {"N": 2, "C": 3, "H": 6, "W": 9, "K": 5, "R": 2, "S": 4}),
    ("conv2d", {"N": 1, "C": 4, "H": 7, "W": 1, "K": 9, "R": 2, "S": 2, "pad": 1, "dtype": "bfloat16"}),
]


def _b_sources(w) -> tuple:
    """The template's B sources (knob b_source), the first the packing one: conv2d's im2col panels and padded
    image, matmul's packed panels and B in place (float32, whole panels only)."""
    return next(k.choices for k in cc.get_space(w, TARGET).knobs if k.name == "b_source")


def _dots(w) -> tuple:
    """The multiply-adds (knob dot) where the target offers bfloat16 pairs, else none to choose."""
    return next((k.choices for k in cc.get_space(w, TARGET).knobs if k.name == "dot"), (None,))


def _sources(w, config: dict) -> list[dict]:
    """The config on each B source (and multiply-add) the workload allows."""
    space = cc.get_space(w, TARGET)
    every = (dict(config, b_source=s, **({"dot": d} if d else {})) for s in _b_sources(w) for d in _dots(w))
    return [c for c in every if space.is_valid(c)]


def _configs(w) -> list[dict]:
    space = cc.get_space(w, TARGET)
    configs = [cc.default_config(w, TARGET)]
    fma = {"dot": "fma"} if _dots(w) != (None,) else {}
    for v in VARIANTS:
        space.validate(BASE | v | {"b_source": _b_sources(w)[0]} | fma)
        configs += _sources(w, BASE | v)
    configs += _sources(w, {**BASE, "parallel": "batch"})  # batched ops with at least 2 problems
    return configs + space.sample(random.Random(w.key), 2)


def _check(w, config) -> None:
    inputs = cc.random_inputs(w, seed=1)
    kernel = cc.build(w, config, TARGET)
    outputs = [np.full(s.shape, np.nan, dtype=s.dtype) for s in cc.get_op(w.op).output_specs(w)]
    kernel(*inputs, *outputs)
    result = cc.verify(w, outputs, cc.expect(w, inputs))
    assert result.ok, f"{w.key} {config}: {result.message}"


@pytest.mark.parametrize("op,params", WORKLOADS, ids=[f"{op}-{'-'.join(map(str, p.values()))}" for op, p in WORKLOADS])
def test_configs_match_numpy(op, params):
    w = cc.make_workload(op, params)
    for config in _configs(w):
        _check(w, config)


def test_batch_split_when_batch_not_a_multiple_of_threads():
    w = cc.make_workload("batch_matmul", batch=5, M=7, N=9, K=11)
    _check(w, {**BASE, "parallel": "batch"})
    _check(w, {**BASE, "parallel": "batch"} | {"mr": 2, "nr": V, "mc": 16, "nc": 64})


def test_one_thread_target():
    target = cc.cpu_target(cores=1)
    w = cc.make_workload("matmul", M=19, N=23, K=29)
    inputs = cc.random_inputs(w)
    for parallel in ("m", "n"):
        out = cc.build(w, {**BASE, "parallel": parallel}, target).run(*inputs)
        assert cc.verify(w, out, cc.expect(w, inputs)).ok


def test_kernel_is_reentrant():
    """Called twice, the second call overwrites (first kc block stores, later ones accumulate)."""
    w = cc.make_workload("matmul", M=33, N=40, K=70)
    kernel = cc.build(w, BASE, TARGET)
    a, b = cc.random_inputs(w)
    c = np.zeros((33, 40), np.float32)
    kernel(a, b, c)
    kernel(a, b, c)
    assert cc.verify(w, [c], cc.expect(w, [a, b])).ok
