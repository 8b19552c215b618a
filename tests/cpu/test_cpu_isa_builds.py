"""Every CPU op for SSE-only, AVX2, AVX-512 and AVX-512 BF16 targets: the default config and a few seeded random
valid configs are generated and compiled with the target's own flags. Kernels of an ISA this host runs are run and
checked against the numpy reference; for an ISA it lacks the shared library is built but never loaded (compile-only).
The same file passes on an AVX2 host (both AVX-512 levels compile-only), on an AVX-512 host without BF16 and on one
with it (all four run)."""
from __future__ import annotations

import random
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

import compiler_core as cc
from compiler_core.runtime.c_runtime import compile_shared_library
from compiler_core.target import host_isas
from tests.sweep_cases import SHAPES

ISAS = ("sse", "avx2", "avx512", "avx512bf16", "amx")
RANDOM_CONFIGS = 2
# One workload per op and dtype: the sweep's odd-sized shape where it has one (partial tiles and vectors).
WORKLOADS = [cc.make_workload(op, dict(shapes[1], dtype=dtype)) for (op, dtype), shapes in SHAPES.items()]


def _mode(isa: str) -> str:
    return "run" if isa in host_isas() else "compile-only"


def _configs(w: cc.Workload, target: cc.Target) -> list[dict]:
    space = cc.get_space(w, target)
    default = cc.default_config(w, target)
    sampled = space.sample(random.Random(f"{target.arch} {w.key}"), RANDOM_CONFIGS + 1)
    return [default] + [c for c in sampled if c != default][:RANDOM_CONFIGS]


def _run_and_verify(w: cc.Workload, config: dict, target: cc.Target) -> str | None:
    kernel = cc.build(w, config, target)
    inputs = cc.random_inputs(w, seed=3)
    result = cc.verify(w, kernel.run(*inputs), cc.expect(w, inputs))
    return None if result.ok else f"{config}: {result.message}"


def _compile_only(w: cc.Workload, config: dict, target: cc.Target) -> str | None:
    library = compile_shared_library(cc.generate(w, config, target), march=target.march_flags)
    return None if library.is_file() and library.stat().st_size > 0 else f"{config}: no library built"


@pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: f"{w.op}-{w.dtype}")
@pytest.mark.parametrize("isa", ISAS, ids=lambda isa: f"{isa}-{_mode(isa)}")
def test_default_and_random_configs_build_for_every_isa(isa, w):
    target = cc.cpu_target(isa=isa, cores=2)
    configs = _configs(w, target)
    assert len(configs) == 1 + RANDOM_CONFIGS, configs
    check = _run_and_verify if isa in host_isas() else _compile_only
    with ThreadPoolExecutor(max_workers=2) as pool:  # the compiler runs in subprocesses: two at once
        failures = [f for f in pool.map(lambda c: check(w, c, target), configs) if f]
    assert not failures, f"{target.arch}, {w.key}: {failures}"


def test_the_flags_are_part_of_the_build_cache_key():
    w = cc.make_workload("reduce_sum", rows=8, cols=64)
    target = cc.cpu_target(isa="sse", cores=1)
    source = cc.generate(w, cc.default_config(w, target), target)
    libraries = {compile_shared_library(source, march=cc.cpu_target(isa=isa).march_flags) for isa in ISAS}
    assert len(libraries) == len(ISAS)


def test_a_kernel_for_an_isa_the_host_lacks_is_refused_not_run():
    missing = [isa for isa in ISAS if isa not in host_isas()]
    if not missing:
        pytest.skip(f"this host runs every ISA ({', '.join(ISAS)})")
    w = cc.make_workload("softmax", rows=4, cols=64)
    target = cc.cpu_target(isa=missing[-1], cores=1)
    with pytest.raises(cc.BuildError, match="does not run on this host"):
        cc.build(w, cc.default_config(w, target), target)


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump not installed")
def test_the_machine_code_uses_the_targets_registers():
    """The GEMM microkernel of each ISA is compiled to that ISA's registers: xmm only for SSE, ymm for AVX2,
    zmm for both AVX-512 levels (the flags reach the compiler, whatever the host is)."""
    w = cc.make_workload("matmul", M=64, N=64, K=64)
    widest = {}
    for isa in ISAS:
        target = cc.cpu_target(isa=isa, cores=1)
        library = compile_shared_library(cc.generate(w, cc.default_config(w, target), target),
                                         march=target.march_flags)
        text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(library)], capture_output=True,
                              text=True, check=True).stdout
        widest[isa] = next((reg for reg in ("zmm", "ymm", "xmm") if f"%{reg}" in text), None)
    assert widest == {"sse": "xmm", "avx2": "ymm", "avx512": "zmm", "avx512bf16": "zmm", "amx": "zmm"}
