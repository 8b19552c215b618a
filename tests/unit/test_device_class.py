"""Device class strings from fingerprints: deterministic, slugged, clear errors."""
from __future__ import annotations

import re

import pytest

from tuner_server.device_class import CLASS_PATTERN, best_isa, device_class, device_kind, slugify

CPU = {"kind": "cpu", "model": "AMD EPYC 7B13", "arch": "x86_64", "isa_flags": ["sse4_2", "avx2", "fma"],
       "compute_units": 2, "memory_bytes": 8 << 30}
GPU = {"kind": "cuda", "model": "NVIDIA H100 80GB HBM3", "arch": "sm_90", "compute_units": 132}


def test_documented_examples():
    assert device_class(CPU) == "cpu-x86_64-avx2-2c"
    assert device_class(GPU) == "cuda-nvidia-h100-80gb-hbm3-sm90"
    assert device_class({**GPU, "model": "NVIDIA H200"}) == "cuda-nvidia-h200-sm90"


@pytest.mark.parametrize("arch, sm", [("sm_90", "90"), ("sm90", "90"), ("90", "90"), ("9.0", "90"),
                                      ("8.6", "86"), ("sm_90a", "90"), ("compute_80", "80"), ("12.0", "120")])
def test_cuda_arch_spellings(arch, sm):
    assert device_class({**GPU, "arch": arch}).endswith(f"-sm{sm}")


@pytest.mark.parametrize("flags, isa", [
    (["avx512f", "avx2", "sse4_2"], "avx512f"), (["avx512_bf16", "avx512bw", "avx512f"], "avx512_bf16"),
    (["amx_bf16", "amx_tile", "avx512_bf16", "avx512f"], "amx_bf16"),
    (["AVX2", "SSE4.2"], "avx2"), (["sse4.2"], "sse4_2"),
    (["asimd", "fp"], "neon"), (["neon"], "neon"), ([], "base"), (["mmx"], "base"),
])
def test_best_isa(flags, isa):
    assert best_isa(flags) == isa


def test_cpu_arch_aliases_and_isa_string():
    assert device_class({**CPU, "arch": "AMD64", "isa_flags": "avx2 fma", "compute_units": 16}) == (
        "cpu-x86_64-avx2-16c")
    assert device_class({**CPU, "arch": "arm64", "isa_flags": ["asimd"], "compute_units": 4}) == (
        "cpu-aarch64-neon-4c")


def test_slugs_are_lowercase_alnum_and_dashes():
    assert slugify("  NVIDIA GeForce RTX 4090 (Laptop) ") == "nvidia-geforce-rtx-4090-laptop"
    assert slugify("A" * 200) == "a" * 64
    name = device_class({**GPU, "model": "Tesla V100-SXM2_32GB!!"})
    assert name == "cuda-tesla-v100-sxm2-32gb-sm90"
    assert re.fullmatch(r"[a-z0-9-]+", name)


def test_deterministic_and_independent_of_extra_fields():
    assert device_class({**CPU, "hostname": "x", "driver_version": "1"}) == device_class(dict(reversed(CPU.items())))
    assert device_kind(device_class(GPU)) == "cuda"


@pytest.mark.parametrize("fingerprint, message", [
    ({}, "missing field 'kind'"),
    ({"kind": "tpu"}, "kind must be 'cpu' or 'cuda'"),
    ({**GPU, "model": ""}, "missing field 'model'"),
    ({**GPU, "model": "!!!"}, "no letters or digits"),
    ({k: v for k, v in GPU.items() if k != "arch"}, "missing field 'arch'"),
    ({**GPU, "arch": "hopper"}, "not like 'sm_90'"),
    ({k: v for k, v in CPU.items() if k != "isa_flags"}, "missing field 'isa_flags'"),
    ({**CPU, "compute_units": 0}, "positive integer"),
    ({**CPU, "compute_units": "2"}, "positive integer"),
    ({k: v for k, v in CPU.items() if k != "compute_units"}, "missing field 'compute_units'"),
])
def test_clear_errors(fingerprint, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        device_class(fingerprint)


def test_every_class_is_one_that_queries_and_imports_can_name():
    assert re.fullmatch(CLASS_PATTERN, device_class({**CPU, "arch": "a" * 100, "compute_units": 65_536}))
    with pytest.raises(ValueError, match="over the 124 a class has"):
        device_class({**CPU, "arch": "a" * 200})
