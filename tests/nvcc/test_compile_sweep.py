"""CUDA compile sweep (nvcc, no GPU): seeded random valid configs of every op x dtype compile for sm_80 and sm_90a."""
from __future__ import annotations

import dataclasses
import random

import pytest

import compiler_core as cc
from compiler_core.codegen import generate_source
from compiler_core.errors import BuildError
from compiler_core.runtime.nvcc_check import nvcc_compile
from tests.sweep_cases import SHAPES, configs_per_case

pytestmark = pytest.mark.nvcc
ARCHS = ("sm_80", "sm_90a")


def _renamed(module, suffix: str):
    return module.with_kernels(dataclasses.replace(k, name=f"{k.name}_{suffix}") for k in module.kernels)


def _combined_source(modules) -> str:
    """One translation unit for many configs: nvcc start-up dominates small kernels."""
    return "\n".join(generate_source(_renamed(m, f"c{i}"), cc.cuda_target()) for i, m in enumerate(modules))


def _cases():
    out = []
    for (op, dtype), shapes in SHAPES.items():
        # the odd shape exercises every guard; the last shape has the largest valid space
        for shape in (shapes[1], shapes[2]):
            out.append(cc.make_workload(op, dict(shape, dtype=dtype)))
    return out


@pytest.mark.parametrize("workload", _cases(), ids=lambda w: w.key)
def test_random_valid_configs_compile(workload):
    target = cc.cuda_target("sm_90")
    space = cc.get_space(workload, target)
    configs = space.sample(random.Random(sum(map(ord, workload.key))), max(3, configs_per_case(workload) // 2))
    assert configs, f"no valid config for {workload.key}"
    modules = [cc.lower(workload, c, target) for c in configs]
    for arch in ARCHS:
        try:
            nvcc_compile(_combined_source(modules), arch)
        except BuildError:
            for c, m in zip(configs, modules, strict=True):  # find the offending config
                try:
                    nvcc_compile(generate_source(m, target), arch)
                except BuildError as exc:
                    pytest.fail(f"{arch}: config {c} does not compile:\n{exc}")
            raise


def _hopper_cases():
    """The sweep's half matmul and batch_matmul cases the sm_90a Hopper kernel takes (K and N multiples of 8)."""
    from compiler_core.schedules.cuda import gemm_sm90

    h100 = cc.cuda_target("sm_90a", sm_count=132)
    return [w for w in _cases() if w.op in ("matmul", "batch_matmul") and gemm_sm90.applies(w, h100)]


@pytest.mark.parametrize("workload", _hopper_cases(), ids=lambda w: w.key)
def test_random_hopper_configs_compile_for_sm90a(workload):
    """The same cases on an sm_90a target, where the half GEMMs dispatch to the TMA + wgmma kernel (sm_90a only)."""
    target = cc.cuda_target("sm_90a", sm_count=132)
    configs = cc.get_space(workload, target).sample(random.Random(sum(map(ord, workload.key))), 3)
    modules = [cc.lower(workload, c, target) for c in configs]
    kernels = [k for m in modules for k in m.kernels]
    assert configs and all(type(m.kernels[0]).__name__ == "OpaqueKernel" for m in modules)
    unique = list({k.name: k for k in kernels}.values())  # equal knobs render one kernel
    nvcc_compile(generate_source(cc.ir.Module("m", tuple(unique), (), (), 0), target), "sm_90a")


def _covering(configs: list[dict], knobs: tuple) -> list[dict]:
    """Few configs that together take every value of each of `knobs` (greedy: the config adding most new values)."""
    wanted = {(k, c[k]) for c in configs for k in knobs}
    chosen = []
    while wanted:
        best = max(configs, key=lambda c: len(wanted & {(k, c[k]) for k in knobs}))
        chosen.append(best)
        wanted -= {(k, best[k]) for k in knobs}
    return chosen


def _wgmma_attention_cases():
    from compiler_core.schedules.cuda import attention_wgmma

    h100 = cc.cuda_target("sm_90a", sm_count=132)
    workloads = [cc.make_workload("attention", dict(shape, dtype=dtype))
                 for (op, dtype), shapes in SHAPES.items() if op == "attention" for shape in shapes]
    return [w for w in workloads if attention_wgmma.applies(w, h100)]


@pytest.mark.parametrize("workload", _wgmma_attention_cases(), ids=lambda w: w.key)
def test_wgmma_attention_configs_compile_for_sm90a(workload):
    """Hopper attention (TMA + wgmma, the default on sm_90a from 64 query rows): configs that take every value of
    each of its knobs compile in one translation unit."""
    target = cc.cuda_target("sm_90a", sm_count=132)
    mine = [c for c in cc.get_space(workload, target) if c["engine"] == "wgmma"]
    configs = _covering(mine, ("consumers", "kv_tile", "stages", "overlap", "pingpong", "fold"))
    modules = [cc.lower(workload, c, target) for c in configs]
    assert all(m.kernels[0].name.startswith("attention_wgmma") for m in modules)
    nvcc_compile(generate_source(cc.ir.Module("m", tuple(m.kernels[0] for m in modules), (), (), 0), target),
                 "sm_90a")


def _tiled_attention_cases():
    workloads = [cc.make_workload("attention", dict(shape, dtype=dtype))
                 for (op, dtype), shapes in SHAPES.items() if op == "attention" for shape in shapes]
    return [(w, arch) for w in workloads for arch in ("sm_75", "sm_90a")
            if any(pins["engine"] == "tiled" for _, pins in cc.get_space(w, cc.cuda_target(arch)).parts)]


@pytest.mark.parametrize("workload, arch", _tiled_attention_cases(), ids=lambda x: getattr(x, "key", x))
def test_tiled_attention_configs_compile(workload, arch):
    """Register-tiled SIMT attention (float32's engine; the half types' where no tensor cores apply): configs that
    take every value of each of its knobs compile in one translation unit."""
    target = cc.cuda_target(arch)
    mine = [c for c in cc.get_space(workload, target) if c["engine"] == "tiled"]
    configs = _covering(mine, ("threads_per_row", "rows_per_block", "thread_rows", "kv_tile", "stages", "kv_splits"))
    modules = [cc.lower(workload, c, target) for c in configs]
    assert all(m.kernels[0].name.startswith("attention_tiled") for m in modules)
    nvcc_compile(generate_source(cc.ir.Module("m", tuple(m.kernels[0] for m in modules), (), (), 0), target), arch)
