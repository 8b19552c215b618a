"""nvcc compile checks (no GPU) of the CUDA row-op templates: hand-picked configs covering every code path
(cached and streamed rows, sub-warp and multi-warp rows, several rows per block, vec 1 and 4, staged short rows,
transpose tiles and pads) for sm_80 and sm_90, plus a register report: a cached row must stay in registers."""
from __future__ import annotations

import dataclasses
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

import compiler_core as cc
from compiler_core.codegen import generate_source
from compiler_core.errors import BuildError
from compiler_core.runtime.nvcc_check import nvcc_compile

pytestmark = pytest.mark.nvcc
ARCHS = ("sm_80", "sm_90")
SHAPES = [(8192, 8192), (1000, 333), (3, 7)]


def _row(tpr, rpb, vec, unroll, **extra):
    return dict(threads_per_row=tpr, rows_per_block=rpb, vec=vec, unroll=unroll, **extra)


CONFIGS = {
    "softmax": [_row(256, 1, 4, 1, cache_row=1), _row(1024, 1, 4, 1, cache_row=1), _row(32, 4, 1, 1, cache_row=1),
                _row(128, 2, 4, 2, cache_row=0), _row(512, 1, 1, 4, cache_row=0), _row(4, 32, 1, 1, cache_row=0)],
    "layernorm": [_row(256, 1, 4, 1, cache_row=1), _row(512, 2, 4, 1, cache_row=1), _row(8, 16, 1, 1, cache_row=1),
                  _row(128, 4, 4, 4, cache_row=0), _row(1024, 1, 1, 2, cache_row=0), _row(32, 8, 1, 1, cache_row=0)],
    "reduce_sum": [_row(256, 1, 4, 4, stage_shared=0), _row(64, 4, 1, 2, stage_shared=0),
                   _row(16, 8, 1, 1, stage_shared=0), _row(1, 128, 1, 1, stage_shared=1),
                   _row(1, 32, 1, 1, stage_shared=1)],
    "transpose": [dict(tile=32, block_rows=8, pad=1), dict(tile=64, block_rows=16, pad=0),
                  dict(tile=16, block_rows=16, pad=1), dict(tile=32, block_rows=1, pad=1)],
}


def _lowered(w, config, target, i):
    """The lowered module with its kernels renamed apart, so many configs share one translation unit."""
    module = cc.lower(w, config, target)
    return module.with_kernels(dataclasses.replace(k, name=f"{k.name}_c{i}") for k in module.kernels)


def _valid_modules(op, rows, cols, target):
    """(config, module) for the configs valid for this shape, plus the default config."""
    w = cc.make_workload(op, rows=rows, cols=cols)
    space = cc.get_space(w, target)
    configs = [c for c in CONFIGS[op] if space.is_valid(c)] + [cc.default_config(w, target)]
    return [(c, _lowered(w, c, target, i)) for i, c in enumerate(configs)]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("op", sorted(CONFIGS))
@pytest.mark.parametrize("rows,cols", SHAPES)
def test_configs_compile(op, rows, cols, arch):
    target = cc.cuda_target(arch)
    modules = _valid_modules(op, rows, cols, target)
    try:
        nvcc_compile("\n".join(generate_source(m, target) for _, m in modules), arch)
    except BuildError:
        for config, module in modules:  # name the offending config
            try:
                nvcc_compile(generate_source(module, target), arch)
            except BuildError as exc:
                pytest.fail(f"{op} {rows}x{cols} {arch}: config {config} does not compile:\n{exc}")
        raise


@pytest.mark.parametrize("op", ("softmax", "layernorm"))
def test_cached_rows_stay_in_registers(op):
    """ptxas reports no stack frame or spill for the cached 8192-column configs (a spilled cache reads twice)."""
    target = cc.cuda_target("sm_90")
    w = cc.make_workload(op, rows=8192, cols=8192)
    cached = [c for c in cc.get_space(w, target) if c["cache_row"]]
    assert cached
    source = "\n".join(generate_source(_lowered(w, c, target, i), target) for i, c in enumerate(cached))
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.cu"
        src.write_text(source)
        proc = subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-O3", "-std=c++17", "-Xptxas", "-v",
                               "-o", str(Path(tmp) / "k.cubin"), str(src)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    reports = re.findall(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", proc.stderr)
    assert len(reports) == len(cached)
    assert all(r == ("0", "0", "0") for r in reports), proc.stderr[-4000:]
