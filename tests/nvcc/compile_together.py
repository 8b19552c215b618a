"""nvcc helpers of the GEMM compile tests: many modules in one nvcc call (kernels renamed apart, the offender
named on failure), and ptxas's register and spill report."""
from __future__ import annotations

import dataclasses
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from compiler_core.codegen import generate_source
from compiler_core.errors import BuildError
from compiler_core.runtime.nvcc_check import nvcc_compile


def renamed(modules):
    return [m.with_kernels(dataclasses.replace(k, name=f"{k.name}_{i}") for k in m.kernels)
            for i, m in enumerate(modules)]


def compile_together(cases, modules, target) -> None:
    """`cases[i]` (workload, config) produced `modules[i]`; fails the test with nvcc's message for the first
    case that does not compile alone."""
    arch = target.arch
    try:
        nvcc_compile("\n".join(generate_source(m, target) for m in renamed(modules)), arch)
    except BuildError:
        for (w, config), m in zip(cases, modules, strict=True):
            try:
                nvcc_compile(generate_source(m, target), arch)
            except BuildError as exc:
                pytest.fail(f"{arch}: {w.key} {config} does not compile:\n{exc}")
        raise


def registers_without_spills(source: str, arch: str) -> int:
    """Compiles with `-Xptxas -v`; asserts no stack frame and no spills; returns the first kernel's registers."""
    with tempfile.TemporaryDirectory(prefix="tf-nvcc-") as tmp:
        src = Path(tmp) / "kernel.cu"
        src.write_text(source)
        proc = subprocess.run(["nvcc", "-cubin", f"-arch={arch}", "-O3", "-std=c++17", "-Xptxas", "-v",
                               "-o", str(Path(tmp) / "kernel.cubin"), str(src)],
                              capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in proc.stderr, proc.stderr
    return int(re.search(r"Used (\d+) registers", proc.stderr).group(1))
