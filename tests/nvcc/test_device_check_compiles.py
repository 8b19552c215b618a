"""The agent's on-device checker compiles for sm_80 and sm_90a with one kernel per output dtype (nvcc, no GPU)."""
from __future__ import annotations

import pytest

from compiler_core.runtime.nvcc_check import nvcc_compile
from device_agent.device_check import CHECK_SOURCE, DTYPES

pytestmark = pytest.mark.nvcc


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_checker_has_a_kernel_per_dtype(arch):
    cubin = nvcc_compile(CHECK_SOURCE, arch, use_cache=False)
    assert DTYPES == ("float32", "float16", "bfloat16")
    for dtype in DTYPES:  # extern "C" names sit unmangled in the cubin's ELF string table
        assert f"tf_check_{dtype}\0".encode() in cubin
