"""Shared checks of the CPU GEMM's ways of reading B (b_source): every sampled config of one source, exact on
matmul shapes drawn by a seeded generator, in three dtypes, for an ISA the host runs."""
from __future__ import annotations

import random

import pytest

import compiler_core as cc
from compiler_core.target import host_isas


def vector_target(cores: int = 2) -> cc.Target:
    """The host's target, or on a host with AMX its widest ISA below it: the b_source tests are of the vector
    microkernels, which AMX's default for bfloat16 replaces (its tiles read B packed: tests/cpu/test_gemm_amx.py)."""
    target = cc.cpu_target(cores=cores)
    return cc.cpu_target(isa="avx512bf16", cores=cores) if target.amx else target


def check_exact(w, config, target, seed=3) -> None:
    """The config's kernel against the float64 reference on every input set of the workload."""
    kernel = cc.build(w, config, target)
    for inputs in cc.input_sets(w, seed=seed):
        result = cc.verify(w, kernel.run(*inputs.arrays), cc.expect(w, inputs.arrays))
        assert result.ok, (w.key, config, inputs.name, result.message)


def check_random_shapes(isa: str, b_source: str, rows: tuple[int, int], depth: int, shapes: int) -> None:
    """`shapes` matmuls of rows[0]..rows[1] rows of A, up to 300 columns and `depth` K steps; up to 3 sampled configs
    with this b_source each."""
    if isa not in host_isas():
        pytest.skip(f"this CPU lacks {isa}")
    target, rng = cc.cpu_target(isa=isa, cores=2), random.Random(isa)
    for _ in range(shapes):
        w = cc.make_workload("matmul", dict(M=rng.randint(*rows), N=rng.randint(1, 300), K=rng.randint(1, depth),
                                            dtype=rng.choice(["float32", "float16", "bfloat16"])))
        configs = [c for c in cc.get_space(w, target).sample(rng, 300) if c["b_source"] == b_source]
        for config in configs[:3]:
            check_exact(w, config, target, seed=rng.randrange(100))
