"""CPU targets for SSE-only, AVX2, AVX-512, AVX-512 BF16 and AMX: the target's data, the spaces' knob choices, the
default configs and the vector widths of the generated C follow the ISA named, never the host's (no compiler runs
here)."""
from __future__ import annotations

import dataclasses
import random
import re

import pytest

import compiler_core as cc
from compiler_core.target import CPU_ISAS, HOST_COMPILER_FLAGS, host_isas, runnable_isas
from tests.space_configs import knob_choices
from tests.sweep_cases import sweep_workloads

ISAS = {"sse": (16, "x86_64-sse"), "avx2": (32, "x86_64-avx2"), "avx512": (64, "x86_64-avx512f"),
        "avx512bf16": (64, "x86_64-avx512_bf16"), "amx": (64, "x86_64-amx_bf16")}
TARGETS = {isa: cc.cpu_target(isa=isa, cores=2) for isa in ISAS}
WORKLOADS = sweep_workloads()  # every CPU op and dtype on three shapes
GEMM_OPS = ("matmul", "batch_matmul", "conv2d")
V2 = "cx16 lahf_lm popcnt pni ssse3 sse4_1 sse4_2"
V3 = V2 + " avx avx2 bmi1 bmi2 f16c fma abm movbe xsave"
# /proc/cpuinfo flag lines, abridged, of the CI machines: an AMD EPYC (AVX2) and an Intel Xeon (AVX-512).
EPYC = "fpu sse sse2 " + V3 + " sha_ni"
XEON = "fpu sse sse2 " + V3 + " avx512f avx512dq avx512cd avx512bw avx512vl avx512_vnni"
ZEN4 = XEON + " avx512_bf16"  # the bfloat16 pair dot product
SAPPHIRE_RAPIDS = ZEN4 + " amx_bf16 amx_tile amx_int8"  # and AMX's tiles


# ---- the targets -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("isa", ISAS)
def test_cpu_target_of_an_isa_is_data(isa):
    vector_bytes, arch = ISAS[isa]
    target = cc.cpu_target(isa=isa, cores=3)
    assert (target.kind, target.arch, target.vector_bytes, target.cores) == ("c", arch, vector_bytes, 3)
    assert target.vector_lanes_f32 == vector_bytes // 4
    assert target.isa is CPU_ISAS[isa] and target.march_flags == CPU_ISAS[isa].march
    assert all(flag.startswith("-m") for flag in target.march_flags)


def test_the_flags_select_each_isa_and_differ():
    assert TARGETS["sse"].march_flags == ("-march=x86-64-v2",)
    assert TARGETS["avx2"].march_flags == ("-march=x86-64-v3",)
    assert "-mavx512f" in TARGETS["avx512"].march_flags
    assert "-mavx512bf16" in TARGETS["avx512bf16"].march_flags
    assert len({t.march_flags for t in TARGETS.values()}) == len(ISAS)
    assert "-mamx-tile" in TARGETS["amx"].march_flags and "-mamx-bf16" in TARGETS["amx"].march_flags
    assert [isa for isa, t in TARGETS.items() if t.bf16_dot] == ["avx512bf16", "amx"]
    assert [isa for isa, t in TARGETS.items() if t.amx] == ["amx"]


def test_unknown_isa_is_refused():
    with pytest.raises(ValueError, match="sse, avx2, avx512"):
        cc.cpu_target(isa="neon")


def test_a_target_rebuilt_from_its_fields_keeps_its_isa():
    """Targets travel as their fields (REST's TargetPublic, replay tables): the ISA comes back from the arch."""
    for target in TARGETS.values():
        again = cc.Target(**dataclasses.asdict(target))
        assert again == target and again.march_flags == target.march_flags
    assert cc.cuda_target("sm_90").isa is None and cc.cuda_target("sm_90").march_flags == ()
    other = dataclasses.replace(TARGETS["sse"], arch="aarch64-sse")
    assert other.isa is None and other.march_flags == HOST_COMPILER_FLAGS


def test_which_isas_a_host_runs_comes_from_its_cpuinfo_flags():
    assert runnable_isas(EPYC.split()) == ("sse", "avx2")
    assert runnable_isas(XEON.split()) == ("sse", "avx2", "avx512")
    assert runnable_isas(ZEN4.split()) == ("sse", "avx2", "avx512", "avx512bf16")
    assert runnable_isas(SAPPHIRE_RAPIDS.split()) == ("sse", "avx2", "avx512", "avx512bf16", "amx")
    assert runnable_isas(SAPPHIRE_RAPIDS.replace(" amx_bf16", "").split())[-1] == "avx512bf16"
    assert runnable_isas(ZEN4.replace(" avx512bw", "").split())[-1] == "avx512"  # GCC's BF16 flag brings BW
    assert runnable_isas(("fpu sse sse2 " + V2).split()) == ("sse",)
    assert runnable_isas(EPYC.replace(" fma", "").split()) == ("sse",)  # x86-64-v3 needs FMA too
    assert runnable_isas("fpu sse sse2".split()) == ()


def test_the_host_target_is_the_widest_isa_it_runs():
    if not host_isas():
        pytest.skip("not an x86-64 host")
    widest = host_isas()[-1]
    assert cc.cpu_target(cores=2) == cc.cpu_target(isa=widest, cores=2)


# ---- spaces and default configs ----------------------------------------------------------------------------

@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("op", GEMM_OPS)
def test_gemm_knob_choices_follow_the_lanes(op, isa):
    target = TARGETS[isa]
    lanes = target.vector_lanes_f32
    w = next(w for _, w in WORKLOADS if w.op == op)
    space = cc.get_space(w, target)
    assert knob_choices(space, "nr") == tuple(lanes * v for v in (1, 2, 3, 4))
    registers = target.vector_registers
    for config in space.sample(random.Random(isa), 50):
        if config.get("dot") == "amx":  # tiles, not vector registers (tests/cpu/test_gemm_amx.py)
            continue
        nv = config["nr"] // lanes
        assert config["nr"] % lanes == 0 and config["mr"] * nv + nv + 1 <= registers


@pytest.mark.parametrize("isa", ISAS)
def test_every_default_config_is_valid_for_its_target(isa):
    target = TARGETS[isa]
    for key, w in WORKLOADS:
        config = cc.default_config(w, target)
        assert cc.get_space(w, target).is_valid(config), (key, config)
        if w.op in GEMM_OPS and config.get("dot") == "amx":  # 2 x 2 tiles (tests/cpu/test_gemm_amx.py)
            assert (config["mr"], config["nr"]) == (32, 32), (key, config)
        elif w.op in GEMM_OPS:  # 6 rows, as many vectors as the registers hold: 2 with 16 registers, 4 with 32
            vectors = {"sse": 2, "avx2": 2, "avx512": 4, "avx512bf16": 4, "amx": 4}[isa]
            assert (config["mr"], config["nr"]) == (6, vectors * target.vector_lanes_f32), (key, config)


def test_gemm_literals_of_one_width_are_invalid_for_another():
    """Why tests must not hard-code nr: 24 is three AVX2 vectors and no whole number of AVX-512 vectors."""
    w = cc.make_workload("matmul", M=64, N=64, K=64)
    config = {**cc.default_config(w, TARGETS["avx2"]), "mr": 4, "nr": 24, "nc": 96, "b_source": "packed"}
    assert cc.get_space(w, TARGETS["avx2"]).is_valid(config)
    assert "nr=24 not in [16, 32, 48, 64]" in cc.get_space(w, TARGETS["avx512"]).violations(config)


# ---- generated C -------------------------------------------------------------------------------------------

def _vector_typedefs(source: str) -> set[tuple[str, int, int]]:
    """(scalar C type, lanes, bytes) of every vector typedef in the source."""
    found = re.findall(r"typedef ([\w ]+?) tf_\w+x(\d+) __attribute__\(\(vector_size\((\d+)\)", source)
    return {(scalar, int(lanes), int(nbytes)) for scalar, lanes, nbytes in found}


@pytest.mark.parametrize("isa", ISAS)
def test_default_kernels_use_the_targets_vector_width(isa):
    target = TARGETS[isa]
    lanes, width = target.vector_lanes_f32, target.vector_bytes
    for key, w in WORKLOADS:
        config = cc.default_config(w, target)
        source = cc.generate(w, config, target)
        typedefs = _vector_typedefs(source)
        # half storage moves the same lanes at half the width, to be widened into float32 vectors; its conversions
        # (bfloat16's, and float16's without F16C) see them as 16-bit and 32-bit integer lanes of the same count
        half = {("unsigned short", lanes, width // 2), ("unsigned int", lanes, width), ("int", lanes, width)}
        storage = {"float16": {("_Float16", lanes, width // 2), *half}, "bfloat16": half}
        if config.get("dot") == "bf16":  # the pair microkernel's A pair and B vectors
            storage["bfloat16"] = {*half, ("unsigned short", 2, 4), ("unsigned short", 32, 64)}
        typedefs -= storage.get(w.dtype, set())
        assert typedefs <= {("float", lanes, width)}, (key, typedefs)
        # transpose and elementwise leave vectorizing to the compiler (omp simd); AMX sums in tiles
        if w.op not in ("transpose", "elementwise") and config.get("dot") != "amx":
            assert typedefs == {("float", lanes, width)}, key


@pytest.mark.parametrize("isa", ISAS)
def test_gemm_microkernel_accumulators_are_whole_vectors(isa):
    target = TARGETS[isa]
    lanes = target.vector_lanes_f32
    w = cc.make_workload("matmul", M=67, N=131, K=45)
    space = cc.get_space(w, target)
    for nr in knob_choices(space, "nr"):
        nc = next(nc for nc in knob_choices(space, "nc") if nc % nr == 0)
        config = {**cc.default_config(w, target), "mr": 2, "nr": nr, "nc": nc}
        source = cc.generate(w, config, target)
        assert f"tf_float32x{lanes} acc[{2 * nr // lanes}]" in source, (isa, nr)


def test_the_same_config_renders_differently_per_isa():
    w = cc.make_workload("softmax", rows=64, cols=128)
    config = cc.default_config(w, TARGETS["avx2"])
    sources = {isa: cc.generate(w, config, target) for isa, target in TARGETS.items()}
    assert len(set(sources.values())) == 3  # the two AVX-512 levels differ in their flags, not in this source
    assert "tf_float32x4" in sources["sse"] and "tf_float32x16" in sources["avx512"]
