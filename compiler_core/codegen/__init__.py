"""Codegen entry: one visitor per target renders a lowered Module to source text."""
from __future__ import annotations

from compiler_core.codegen.c import CCodegen
from compiler_core.codegen.cuda import CudaCodegen
from compiler_core.ir.stmt import Module
from compiler_core.target import Target


def generate_source(module: Module, target: Target) -> str:
    if target.kind == "cuda":
        return CudaCodegen().render(module)
    return CCodegen(threads=target.cores).render(module)


__all__ = ["CCodegen", "CudaCodegen", "generate_source"]
