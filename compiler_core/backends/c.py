"""The C backend: C + OpenMP rendered for an x86-64 (or host) ISA, built by the host C compiler, called via ctypes."""
from __future__ import annotations

from compiler_core.backends import Backend
from compiler_core.codegen import c_half
from compiler_core.codegen.c import CCodegen
from compiler_core.errors import BuildError
from compiler_core.passes.flatten_buffers import flatten_buffers
from compiler_core.passes.infer_launch import infer_launch
from compiler_core.passes.simplify import simplify
from compiler_core.target import host_isas, host_runs


def render(module, target) -> str:
    # without F16C converting on the bits (vectorizable) is 1.5-14x faster than libgcc's call per cast; with it the
    # cast's one instruction wins wherever the loop stays scalar (fp16 attention: 2.7x), and a template that wants
    # the bits elsewhere asks for them (the f16_load / f16_store intrinsics: the elementwise template's `half_io`)
    return CCodegen(threads=target.cores, half_conversion=target.half_conversion,
                    f16c_lanes=c_half.f16c_lanes(target),
                    int16_lanes=c_half.int16_intrinsic_lanes(target)).render(module)


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
