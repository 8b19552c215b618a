"""The CPU elementwise template: whole column tiles and the row's tail in a loop of its own (no bound check in the
vectorized loop), float16 loads and stores by cast or on the bits (`half_io`, with its default rule and stored
configs from before it), correct through every tail and ISA build this host runs."""
from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

import compiler_core as cc
from compiler_core.target import host_isas

ISAS = [isa for isa in ("sse", "avx2", "avx512") if isa in host_isas()]
F16C_ISA = next((isa for isa in ("avx2", "avx512") if isa in host_isas()), None)


def _run(w, config, target) -> bool:
    kernel = cc.build(w, config, target)
    inputs = cc.random_inputs(w, seed=5)
    outs = [np.full(s.shape, np.nan, dtype=s.dtype) for s in cc.get_op(w.op).output_specs(w)]
    kernel(*inputs, *outs)
    return cc.verify(w, outs, cc.expect(w, inputs)).ok


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_every_tail_is_computed(isa, dtype):
    target = cc.cpu_target(isa=isa)
    for cols in (1, 63, 65, 300):
        w = cc.make_workload("elementwise", {"rows": 5, "cols": cols, "dtype": dtype, "vectors": "w",
                                             "expr": "tanh(x*w)+log(abs(y)+1)"})
        base = cc.default_config(w, target)
        for col_tile in (64, 256):
            knobs = {k.name: k for k in cc.get_space(w, target).knobs}
            for half_io in (knobs["half_io"].choices if "half_io" in knobs else (None,)):
                config = dict(base, col_tile=col_tile, rows_per_task=2)
                if half_io:
                    config["half_io"] = half_io
                assert _run(w, config, target), (isa, cols, config)


def test_the_tail_has_its_own_loop_without_a_bound_check():
    target = cc.cpu_target(isa="avx2")
    w = cc.make_workload("elementwise", {"rows": 4, "cols": 333, "expr": "exp(x)"})
    source = cc.generate(w, dict(cc.default_config(w, target), col_tile=64), target)
    assert "< 333)" not in source  # the old bound check, `if (j < cols)` inside the tile loop
    assert re.search(r"for \(int jt = 0; jt < 5; \+\+jt\)", source) and re.search(r"jr < 13;", source)


def test_half_io_for_the_half_types_where_it_chooses_something():
    avx2, sse = cc.cpu_target(isa="avx2"), cc.cpu_target(isa="sse")
    f16, bf16, f32 = (cc.make_workload("elementwise", {"rows": 4, "cols": 64, "dtype": dt, "expr": "gelu(x)"})
                      for dt in ("float16", "bfloat16", "float32"))
    assert "half_io" in cc.get_space(f16, avx2).names
    assert "half_io" not in cc.get_space(f32, avx2).names
    choices = {k.name: k.choices for k in cc.get_space(f16, sse).knobs}
    assert choices["half_io"] == ("bits", "staged")  # no cast: the C backend converts on the bits there anyway
    assert {k.name: k.choices for k in cc.get_space(bf16, sse).knobs}["half_io"] == ("cast", "staged")
    assert "tf_f16_load(&in_x" in cc.generate(f16, dict(cc.default_config(f16, sse), half_io="bits"), sse)
    # the stored configs of before the knob there stay in the space they came from (the C backend's bits)
    old = {"rows_per_task": 1, "col_tile": 64, "simd": 0}
    assert "tf_f16_load(&in_x" in cc.generate(f16, old, sse)


@pytest.mark.parametrize("expr,compute_bound", [("gelu(x)", True), ("tanh(x*w+b)", True), ("sigmoid(x)*y", True),
                                                ("x*w+b", False), ("relu(x)+y", False),
                                                ("max(x,y)/sqrt(abs(y)+1)", False)])
def test_half_io_default_is_staged_on_x86_else_the_bits_where_the_chain_is_compute_bound(expr, compute_bound):
    w = cc.make_workload("elementwise", {"rows": 4, "cols": 64, "dtype": "float16", "expr": expr})
    f16c = cc.cpu_target(isa="avx2")
    config = cc.default_config(w, f16c)
    assert config["half_io"] == "staged"
    assert "_mm256_cvtph_ps(" in cc.generate(w, config, f16c)  # the tile converted 8 values an instruction
    # without F16C (SSE): staged too, the tile's vectors converted on the bits, their 16-bit lanes by SSE4.1
    sse = cc.cpu_target(isa="sse")
    config = cc.default_config(w, sse)
    assert config["half_io"] == "staged"
    source = cc.generate(w, config, sse)
    assert "tf_f16_to_f32_x4(" in source and "_mm_cvtepu16_epi32(" in source and "_mm_packus_epi32(" in source
    # a machine whose compiler casts (no x86 ISA, so no intrinsics): the bits only where the loop is compute-bound
    other = dataclasses.replace(f16c, arch="aarch64-neon")
    config = cc.default_config(w, other)
    want = "bits" if compute_bound else "cast"
    assert config["half_io"] == want
    source = cc.generate(w, config, other)
    assert ("tf_f16_store(" in source) == (want == "bits") and ("(_Float16)(" in source) == (want == "cast")
    assert "_mm" not in source


@pytest.mark.parametrize("isa", ["avx512", "avx2", "sse"])
@pytest.mark.parametrize("expr", ["gelu(x*w+b)", "x*w+b"])
def test_bfloat16_is_staged_where_the_isa_converts_its_vectors_by_intrinsics(isa, expr):
    target = cc.cpu_target(isa=isa)
    w = cc.make_workload("elementwise", {"rows": 4, "cols": 64, "dtype": "bfloat16", "expr": expr})
    config = cc.default_config(w, target)
    assert config["half_io"] == "staged"
    source = cc.generate(w, config, target)
    lanes = target.vector_lanes_f32
    assert "float s_x[" in source and f"tf_f32_to_bf16_x{lanes}(" in source and f"tf_bf16_to_f32_x{lanes}(" in source
    assert "_mm" in source  # the tile's vectors converted by the ISA's intrinsics
    # a machine without them: staged only where a compute-bound loop would otherwise run at 16-bit lanes' width
    for vector_bytes in (16, 64):
        other = dataclasses.replace(target, arch="aarch64-neon", vector_bytes=vector_bytes)
        want = "staged" if expr.startswith("gelu") and vector_bytes == 64 else "cast"
        config = cc.default_config(w, other)
        assert config["half_io"] == want
        assert "_mm" not in cc.generate(w, config, other)


def test_staged_tiles_fit_on_the_stack():
    target = cc.cpu_target(isa="avx2")
    w = cc.make_workload("elementwise", {"rows": 4, "cols": 5000, "dtype": "float16", "expr": "x*2"})
    with pytest.raises(cc.ConfigError, match="col_tile <= 1024"):
        cc.build(w, dict(cc.default_config(w, target), col_tile=4096), target)


@pytest.mark.skipif(F16C_ISA is None, reason="no ISA with F16C on this host")
def test_a_float16_config_stored_before_half_io_lowers_with_casts():
    target = cc.cpu_target(isa=F16C_ISA)
    w = cc.make_workload("elementwise", {"rows": 6, "cols": 70, "dtype": "float16", "expr": "gelu(x)"})
    stored = {"rows_per_task": 2, "col_tile": 64, "simd": 1}
    source = cc.generate(w, stored, target)
    assert "tf_f16_load" not in source and "(_Float16)(" in source
    assert _run(w, stored, target)
    with pytest.raises(cc.ConfigError, match="half_io"):
        cc.build(w, dict(stored, half_io="neither"), target)
