"""nvcc_compile caches cubins by (nvcc version, flags, arch, source): a rebuild is a file read, a change of any
of them is a new build, and a failed build is never cached."""
from __future__ import annotations

import pytest

from compiler_core.errors import BuildError
from compiler_core.runtime import nvcc_check
from compiler_core.runtime.nvcc_check import nvcc_compile

pytestmark = pytest.mark.nvcc

SOURCE = 'extern "C" __global__ void tf_k(float* y) { y[threadIdx.x] = %s; }\n'


def test_second_build_is_read_from_the_cache(tmp_path, monkeypatch):
    first = nvcc_compile(SOURCE % "1.0f", "sm_90", cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.cubin"))) == 1

    def no_nvcc(*_args, **_kwargs):
        raise AssertionError("nvcc ran although the cubin was cached")

    monkeypatch.setattr(nvcc_check, "_run_nvcc", no_nvcc)
    assert nvcc_compile(SOURCE % "1.0f", "sm_90", cache_dir=tmp_path) == first


def test_source_and_arch_are_part_of_the_key(tmp_path):
    a = nvcc_compile(SOURCE % "1.0f", "sm_90", cache_dir=tmp_path)
    b = nvcc_compile(SOURCE % "2.0f", "sm_90", cache_dir=tmp_path)
    c = nvcc_compile(SOURCE % "1.0f", "sm_80", cache_dir=tmp_path)
    assert len({a, b, c}) == 3
    assert len(list(tmp_path.glob("*.cubin"))) == 3
    assert not list(tmp_path.glob("*.tmp"))


def test_failures_are_not_cached(tmp_path):
    for _ in range(2):
        with pytest.raises(BuildError, match="nvcc for sm_90 failed"):
            nvcc_compile("this is not CUDA", "sm_90", cache_dir=tmp_path)
    assert not list(tmp_path.iterdir())


def test_cache_can_be_bypassed(tmp_path):
    nvcc_compile(SOURCE % "3.0f", "sm_90", cache_dir=tmp_path, use_cache=False)
    assert not tmp_path.exists() or not list(tmp_path.iterdir())
