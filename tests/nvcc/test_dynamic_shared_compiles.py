"""Dynamic shared memory beyond 48 KiB: nvcc compiles it for sm_80 and sm_90a; on a GPU the kernel opts in,
launches with shared= and computes through both buffers."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import compiler_core as cc
from compiler_core.codegen import generate_source
from tests.unit.test_dynamic_shared import _module


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_nvcc_compiles_a_kernel_with_dynamic_shared_memory_for_sm_80_and_sm_90a():
    from compiler_core.runtime.nvcc_check import nvcc_compile

    for arch in ("sm_80", "sm_90a"):
        target = cc.cuda_target(arch)
        assert nvcc_compile(generate_source(cc.run_passes(_module(64 * 1024, 64 * 1024), target), target), arch,
                            use_cache=False)


@pytest.mark.gpu
def test_a_kernel_with_100_kib_of_dynamic_shared_memory_runs():
    from compiler_core.runtime.cuda_runtime import cuda_available, device_target

    if not cuda_available():
        pytest.skip("no CUDA device or pycuda")
    target = device_target()
    module = cc.run_passes(_module(40 * 1024, 60 * 1024), target)
    from compiler_core.runtime.cuda_runtime import CudaModule

    runtime = CudaModule(generate_source(module, target), list(module.kernels), arch=target.arch, module=module)
    out = np.zeros(256, np.float32)
    runtime.run_host([out])
    assert np.array_equal(out, (np.arange(256) + 1) % 256)
