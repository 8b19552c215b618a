"""Codegen entry: one visitor per target renders a lowered Module to source text."""
from __future__ import annotations

from compiler_core.codegen.c import CCodegen
from compiler_core.codegen.cuda import CudaCodegen
from compiler_core.ir.stmt import Module
from compiler_core.target import Target


def generate_source(module: Module, target: Target) -> str:
    from compiler_core.backends import backend  # the backends import the codegens of this package

    return backend(target.kind).render(module, target)


__all__ = ["CCodegen", "CudaCodegen", "generate_source"]
