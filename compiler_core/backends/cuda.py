"""The CUDA backend: CUDA C kernels compiled by nvcc to cubins for the target's exact arch, launched via pycuda."""
from __future__ import annotations

from compiler_core.backends import Backend
from compiler_core.codegen.cuda import CudaCodegen
from compiler_core.passes.flatten_buffers import flatten_buffers
from compiler_core.passes.infer_launch import infer_launch
from compiler_core.passes.simplify import simplify
from compiler_core.passes.vectorize import vectorize
from compiler_core.passes.verify_resources import verify_resources


def render(module, target) -> str:
    return CudaCodegen().render(module)


def compile_source(source: str, target, cache_dir=None) -> bytes:
    from compiler_core.runtime.nvcc_check import nvcc_compile

    return nvcc_compile(source, target.arch, cache_dir=cache_dir)


def load(module, source: str, target, artifact=None, cache_dir=None):
    from compiler_core.runtime.cuda_runtime import CudaModule

    return CudaModule(source, list(module.kernels), arch=target.arch, cubin=artifact, module=module)


BACKEND = Backend(
    kind="cuda",
    device_kind="cuda",
    templates_module="compiler_core.schedules.cuda",
    passes=(flatten_buffers, simplify, vectorize, infer_launch, verify_resources),
    render=render,
    compile=compile_source,
    load=load,
)
