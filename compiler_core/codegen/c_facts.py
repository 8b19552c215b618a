"""What a module needs declared before its kernels in C (vector types, conversion, intrinsic and math helpers),
gathered in one walk of its kernels: one walk per fact had been most of the time a module took to render."""
from __future__ import annotations

from dataclasses import dataclass, field

from compiler_core.codegen.c_libm import LIBM
from compiler_core.codegen.c_vector_math import VECTOR_MATH
from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.visitor import walk

HALF_PAIR = {"float16", "float32"}


@dataclass
class ModuleFacts:
    vector_types: set = field(default_factory=set)  # (scalar, lanes) of every vector value and buffer
    bf16_lanes: set = field(default_factory=set)  # lanes at which bfloat16 values convert or are constants
    half_bits: set = field(default_factory=set)  # lanes at which float16 converts on the bits (1: scalar)
    f16c: bool = False  # some float16 vector converts by the F16C intrinsics
    calls: set = field(default_factory=set)  # names of every call (intrinsics and math alike)
    amx_tiles: set = field(default_factory=set)  # (row tiles, column tiles, gathered) of the AMX microkernel calls
    vector_math: set = field(default_factory=set)  # (name, scalar, lanes) of vector math calls
    scalar_math: set = field(default_factory=set)  # float32 scalar math rendered inline (sigmoid's as exp)


def module_facts(module: S.Module, f16c_lanes: tuple = (), f16_bits: bool = False) -> ModuleFacts:
    """The facts of `module`'s kernels. Float16 conversions: vectors of `f16c_lanes` by F16C; with `f16_bits`
    every other conversion between float16 and float32 on the bits, as f16_load / f16_store always are."""
    facts = ModuleFacts()

    def visit(node) -> None:
        dtype = node.buffer.dtype if isinstance(node, S.Allocate) else \
            getattr(node, "dtype", None) if isinstance(node, E.Expr) else None
        if isinstance(dtype, str) and dtype != "handle" and E.lanes_of(dtype) > 1:
            facts.vector_types.add((E.scalar_of(dtype), E.lanes_of(dtype)))
        if isinstance(node, E.Cast):
            pair = {E.scalar_of(node.dtype), E.scalar_of(node.value.dtype)}
            lanes = E.lanes_of(node.dtype)
            if "bfloat16" in pair:
                facts.bf16_lanes.add(lanes)
            if pair == HALF_PAIR:
                if lanes in f16c_lanes:
                    facts.f16c = True
                elif f16_bits:
                    facts.half_bits.add(lanes)
        elif isinstance(node, E.FloatImm) and E.scalar_of(node.dtype) == "bfloat16":
            facts.bf16_lanes.add(1)
        elif isinstance(node, E.Call):
            _call(facts, node)

    for func in module.kernels:
        walk(func.body, visit)
    return facts


def _call(facts: ModuleFacts, node: E.Call) -> None:
    facts.calls.add(node.name)
    if node.name in ("f16_load", "f16_store"):
        facts.half_bits.add(1)
    elif node.name == "amx_tile":
        facts.amx_tiles.add((node.args[8].value, node.args[9].value, len(node.args) > 10))
    if E.lanes_of(node.dtype) > 1:
        if node.name in VECTOR_MATH:
            facts.vector_math.add((node.name, E.scalar_of(node.dtype), E.lanes_of(node.dtype)))
    elif E.scalar_of(node.dtype) == "float32" and node.name in (*LIBM, "sigmoid"):
        facts.scalar_math.add("exp" if node.name == "sigmoid" else node.name)
