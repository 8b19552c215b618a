"""The C backend: C + OpenMP rendered for an x86-64 (or host) ISA, built by the host C compiler, called via ctypes."""
from __future__ import annotations

from compiler_core.backends import Backend
from compiler_core.codegen.c import CCodegen
from compiler_core.errors import BuildError
from compiler_core.passes.flatten_buffers import flatten_buffers
from compiler_core.passes.infer_launch import infer_launch
from compiler_core.passes.simplify import simplify
from compiler_core.target import host_isas, host_runs


def render(module, target) -> str:
    return CCodegen(threads=target.cores).render(module)


def compile_source(source: str, target, cache_dir=None):
    from compiler_core.runtime.c_runtime import compile_shared_library

    return compile_shared_library(source, cache_dir, march=target.march_flags)


def load(module, source: str, target, artifact=None, cache_dir=None):
    from compiler_core.runtime.c_runtime import CLibrary

    if not host_runs(target):
        raise BuildError(f"{target.arch} code does not run on this host (it runs {', '.join(host_isas())}): "
                         "generate() and compile_shared_library() still work for it")
    return CLibrary(artifact or compile_source(source, target, cache_dir), len(module.args))


BACKEND = Backend(
    kind="c",
    device_kind="cpu",
    templates_module="compiler_core.schedules.cpu",
    passes=(flatten_buffers, simplify, infer_launch),
    render=render,
    compile=compile_source,
    load=load,
)
