"""rpc/convert.py without a network: what a hostile agent's fields get (a FieldError naming the field and what is
allowed), held to the same rules as an import of the trial (repo/plausible.py) and to compiler_core's own targets."""
from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime

import pytest

import compiler_core as cc
from tunefarm_proto import tunefarm_pb2 as pb
from tuner_server.device_class import CLASS_PATTERN, device_class
from tuner_server.repo import plausible
from tuner_server.rpc import convert

CPU_TARGET = cc.cpu_target(isa="avx2", cores=2)
H100 = cc.cuda_target("sm_90a", sm_count=132, l2_bytes=50 << 20)


def result(status=pb.OK, **fields) -> pb.TrialResult:
    values = {"task_id": "t1", "attempt": 1, "status": status, "samples_s": [1e-3, 1.1e-3, 1.2e-3],
              "median_s": 1.1e-3, "ci_low_s": 1e-3, "ci_high_s": 1.2e-3, "codegen_version": "cg", "max_abs_error": 0.0}
    return pb.TrialResult(**{**values, **fields})


def refused(message, field: str) -> str:
    with pytest.raises(convert.FieldError) as info:
        convert.trial_report(message, "results[0]") if isinstance(message, pb.TrialResult) else \
            convert.register_call(message)
    assert info.value.field == field, str(info.value)
    return str(info.value)


# ---- 1. timings an import would refuse are refused at report time, by the same rules -------------------------------
IMPLAUSIBLE = [
    ({"samples_s": [0.0, 0.0, 0.0], "median_s": 1e-9, "ci_low_s": 0, "ci_high_s": 0}, "samples[0] must be > 0"),
    ({"samples_s": [1.0, 1.0], "median_s": 1e-9, "ci_low_s": 0, "ci_high_s": 0}, "outside its samples' range"),
    ({"samples_s": [1e-3, 2e-3], "median_s": 5e-3, "ci_low_s": 1e-3, "ci_high_s": 6e-3}, "outside its samples"),
    ({"ci_low_s": 0.0, "ci_high_s": 1.2e-3}, "ci_low_s must be > 0"),
    ({"samples_s": [0.0] * 8, "median_s": 1e-9, "ci_low_s": 0, "ci_high_s": 0, "baseline_samples_s": [1e-3] * 8},
     "samples[0] must be > 0"),
    ({"samples_s": [1e-3] * 8, "median_s": 1e-3, "baseline_samples_s": [1e-3] * 7 + [0.0]},
     "baseline_samples_s[7] must be > 0"),
    ({"samples_s": [1e-3] * 8, "median_s": 1e-3, "reference_samples_s": [0.0] * 8},
     "reference_samples_s[0] must be > 0"),
]


@pytest.mark.parametrize("fields, rule", IMPLAUSIBLE)
def test_an_ok_result_with_impossible_timings_is_refused_naming_the_result_and_the_rule(fields, rule):
    message = refused(result(**fields), "results[0]")
    assert message.startswith("results[0]: implausible OK result") and rule in message


@pytest.mark.parametrize("fields", [f for f, _ in IMPLAUSIBLE] + [
    {}, {"samples_s": [2e-3], "median_s": 2e-3, "ci_low_s": 2e-3, "ci_high_s": 2e-3},
    {"samples_s": [1e-3, 3e-3], "median_s": 2e-3, "ci_low_s": 0, "ci_high_s": 0}])
def test_report_time_and_import_time_agree_on_every_case(fields):
    """Whatever a report stores an import of the trial takes, and what an import refuses a report refuses."""
    message = result(**fields)
    given = (message.ci_low_s, message.ci_high_s) != (0, 0)  # the wire's 'no CI'
    line = {"status": "OK", "samples": list(message.samples_s), "median_s": message.median_s,
            "ci_low_s": message.ci_low_s if given else None, "ci_high_s": message.ci_high_s if given else None}
    import_refuses = plausible.timings_problem(line) is not None or any(
        v <= 0 for v in [*message.baseline_samples_s, *message.reference_samples_s])
    try:
        stored = convert.trial_report(message, "results[0]")
    except convert.FieldError:
        assert import_refuses
    else:
        assert not import_refuses
        assert plausible.timings_problem({"status": stored.status, "samples": list(stored.samples_s),
                                           "median_s": stored.median_s, "ci_low_s": stored.ci_low_s,
                                           "ci_high_s": stored.ci_high_s}) is None


def test_a_failed_result_keeps_no_timings_whatever_it_sent():
    stored = convert.trial_report(result(pb.COMPILE_ERROR, samples_s=[0.0], median_s=0.0), "results[0]")
    assert (stored.samples_s, stored.median_s, stored.ci_low_s) == ((), None, None)


def test_a_blank_codegen_version_is_refused():
    refused(result(codegen_version="   "), "results[0].codegen_version")
    assert convert.trial_report(result(codegen_version=""), "results[0]").codegen_version == ""  # the agent's


# ---- 2. a long error text is stored within what an import takes --------------------------------------------------
@pytest.mark.parametrize("length", [plausible.MAX_ERROR_CHARS - 1, plausible.MAX_ERROR_CHARS,
                                    plausible.MAX_ERROR_CHARS + 1, 40_000])
def test_a_long_error_text_keeps_its_end_within_the_import_limit(length):
    text = "".join(chr(ord("a") + i % 26) for i in range(length - 4)) + "END\x00"
    stored = convert.trial_report(result(pb.COMPILE_ERROR, error=text), "results[0]").error
    assert len(stored) == min(length, plausible.MAX_ERROR_CHARS)
    assert stored.endswith("END\ufffd") and (stored.startswith("...") == (length > plausible.MAX_ERROR_CHARS))
    now = datetime.now(UTC)
    line = {"codegen_version": "cg", "status": "COMPILE_ERROR", "error": stored, "config": {}, "created_at": now}
    assert plausible.trial_problem(line, now) is None  # what an import of the exported trial checks
    assert convert.MAX_ERROR_CHARS is plausible.MAX_ERROR_CHARS  # one limit, defined once


# ---- 3, 5, 6. Register: the arch, and a compiler target compiler_core generates code for, of the class's ISA -------
def cpu_request(target: cc.Target | dict = CPU_TARGET, **device) -> pb.RegisterRequest:
    fields = target if isinstance(target, dict) else target.to_dict()
    values = {"kind": "cpu", "model": "m", "arch": "x86_64", "isa_flags": ["sse4_2", "avx", "avx2", "fma"],
              "compute_units": fields["cores"], "target": pb.Target(**fields)}
    return pb.RegisterRequest(agent_name="a", codegen_version="cg", device=pb.DeviceFingerprint(**{**values, **device}))


def cuda_request(target: cc.Target | dict = H100, **device) -> pb.RegisterRequest:
    fields = target if isinstance(target, dict) else target.to_dict()
    values = {"kind": "cuda", "model": "NVIDIA H100", "arch": "sm_90", "compute_units": fields["sm_count"],
              "target": pb.Target(**fields)}
    return pb.RegisterRequest(agent_name="a", codegen_version="cg", device=pb.DeviceFingerprint(**{**values, **device}))


def test_a_cuda_arch_that_is_no_compute_capability_names_device_arch():
    message = refused(cuda_request(arch="smx"), "device.arch")
    assert "'smx'" in message and "sm_90" in message


def edited(target: cc.Target, **fields) -> dict:
    return {**target.to_dict(), **fields}


BAD_TARGETS = [
    (cpu_request(edited(cc.cpu_target(isa="sse", cores=1), vector_bytes=3), isa_flags=["sse4_2"]),
     "device.target.vector_bytes", ["16", "3"]),
    (cpu_request(edited(CPU_TARGET, vector_bytes=64)), "device.target.vector_bytes", ["32"]),
    (cpu_request(edited(CPU_TARGET, arch="x86_64-avx3")), "device.target.arch", ["avx512f", "avx2"]),
    (cpu_request(edited(CPU_TARGET, arch="aarch64-neon"), arch="aarch64", isa_flags=["neon"]), "device.target.arch",
     ["'<machine>-sse'"]),
    (cpu_request(edited(CPU_TARGET, arch="aarch64-avx2"), isa_flags=["avx2"]), "device.target.arch",
     ["'<machine>-sse'"]),
    (cpu_request(edited(CPU_TARGET, warp_size=32)), "device.target.warp_size", ["1"]),
    (cpu_request(edited(CPU_TARGET, sm_count=8)), "device.target.sm_count", ["0"]),
    (cpu_request(edited(CPU_TARGET, tensor_cores=["wmma_f16"])), "device.target.tensor_cores", []),
    (cuda_request(edited(H100, arch="sm_60"), arch="sm_60"), "device.target.arch", ["sm_70"]),
    (cuda_request(edited(H100, arch="sm_90", tensor_cores=["wmma_f16", "mma_bf16", "wgmma"])),
     "device.target.tensor_cores", ["wgmma"]),
    (cuda_request(edited(H100, sm_count=0), compute_units=132), "device.target.sm_count", ["at least 1"]),
    (cuda_request(edited(H100, sm_count=100), compute_units=132), "device.target.sm_count", ["132"]),
    (cuda_request(edited(H100, warp_size=16)), "device.target.warp_size", ["32"]),
    (cuda_request(edited(H100, vector_bytes=3)), "device.target.vector_bytes", ["16"]),
    (cuda_request(edited(H100, register_file=0)), "device.target.register_file", ["between 1 and 65536"]),
    (cuda_request(edited(H100, max_dynamic_shared_bytes=1 << 30)), "device.target.max_dynamic_shared_bytes",
     [str(227 * 1024)]),
    (cuda_request(edited(H100, cores=4)), "device.target.cores", ["0"]),
]


@pytest.mark.parametrize("request_, field, words", BAD_TARGETS, ids=[f"{i}-{c[1]}" for i, c in enumerate(BAD_TARGETS)])
def test_a_target_compiler_core_cannot_generate_code_for_is_refused(request_, field, words):
    message = refused(request_, field)
    for word in words:
        assert word in message, (word, message)


@pytest.mark.parametrize("isa, flags, token", [
    ("sse", ["sse4_2"], "sse4_2"), ("avx2", ["sse4_2", "avx", "avx2", "fma", "f16c"], "avx2"),
    ("avx512", ["avx2", "avx512f"], "avx512f"), ("avx512bf16", ["avx512f", "avx512_bf16"], "avx512_bf16"),
    ("amx", ["avx512_bf16", "amx_tile", "amx_bf16"], "amx_bf16")])
def test_compiler_cores_own_cpu_targets_register(isa, flags, token):
    call = convert.register_call(cpu_request(cc.cpu_target(isa=isa, cores=3), isa_flags=flags))
    assert cc.Target.from_dict(call.fingerprint["target"]) == cc.cpu_target(isa=isa, cores=3)
    assert device_class(call.fingerprint) == f"cpu-x86_64-{token}-3c"


def test_other_targets_an_agent_reads_off_its_device_register():
    arm = dataclasses.replace(cc.cpu_target(isa="sse", cores=4), arch="aarch64-sse", l2_bytes=1 << 20)
    call = convert.register_call(cpu_request(arm, arch="arm64", isa_flags=["neon"]))
    assert device_class(call.fingerprint) == "cpu-aarch64-neon-4c"
    a100 = dataclasses.replace(cc.cuda_target("sm_80", sm_count=108), max_dynamic_shared_bytes=160 * 1024)
    call = convert.register_call(cuda_request(a100, arch="8.0"))
    assert device_class(call.fingerprint) == "cuda-nvidia-h100-sm80"
    convert.register_call(cuda_request(cc.cuda_target("sm_120", sm_count=84), arch="sm_120"))
    # what device_target read off a lent NVIDIA H200 (cupy's getDeviceProperties, 2026): sm_90 runs sm_90a code
    h200 = dataclasses.replace(cc.cuda_target("sm_90a", sm_count=132, l2_bytes=62914560,
                                              max_dynamic_shared_bytes=232448),
                               warp_size=32, max_threads_per_block=1024, register_file=65536, max_shared_bytes=49152)
    call = convert.register_call(cuda_request(h200, model="NVIDIA H200", arch="sm_90"))
    assert device_class(call.fingerprint) == "cuda-nvidia-h200-sm90"


@pytest.mark.parametrize("flags, target", [
    (["avx2"], cc.cpu_target(isa="avx512", cores=1)),  # the audit's: a class named avx2 whose target is AVX-512
    (["avx2", "avx512f"], cc.cpu_target(isa="avx2", cores=1)),
    (["avx512_bf16", "amx_tile", "amx_bf16"], cc.cpu_target(isa="avx512bf16", cores=1)),
    ([], cc.cpu_target(isa="sse", cores=1)),
    (["neon"], cc.cpu_target(isa="sse", cores=1)),
])
def test_isa_flags_that_name_another_isa_than_the_target_are_refused(flags, target):
    message = refused(cpu_request(target, isa_flags=flags), "device.isa_flags")
    assert target.arch in message


def test_a_cpu_arch_other_than_the_targets_machine_is_refused():
    message = refused(cpu_request(arch="x86_64-sse"), "device.target.arch")
    assert "x86_64-sse-<isa>" in message
    refused(cpu_request(arch="---"), "device.arch")


def test_every_registered_class_is_one_imports_and_queries_accept():
    long_machine = "a" * 32
    target = dataclasses.replace(cc.cpu_target(isa="sse", cores=65_536), arch=f"{long_machine}-sse")
    call = convert.register_call(cpu_request(target, arch=long_machine, isa_flags=["neon"]))
    assert re.fullmatch(CLASS_PATTERN, device_class(call.fingerprint))
    refused(cpu_request(dataclasses.replace(target, arch=f"{'a' * 33}-sse"), arch="a" * 33, isa_flags=["neon"]),
            "device.target.arch")
