"""The isolated worker with real processes: a real kernel is measured; a segfault, an infinite loop and a wrong
answer (the fault plugin, a test double) become RUNTIME_ERROR, TIMEOUT and WRONG_ANSWER, and the worker keeps
serving the next task. Also the build pool, the runner, build-error classification and the fingerprint."""
from __future__ import annotations

import os
import signal
import time

import pytest

import compiler_core as cc
from device_agent import fingerprint as fp
from device_agent.prebuild import BuildPool, prebuild
from device_agent.records import MeasureOptions, Status, Task
from device_agent.runner import TaskRunner
from device_agent.sandbox import PIPE_SLACK_S, Sandbox, WorkerStartError
from device_agent.worker import classify_build_error, execute
from tests.space_configs import one_vector_microkernel
from tunefarm_proto import tunefarm_pb2

PLUGIN = "tests.fault_plugin"
OPTS = MeasureOptions(warmup=1, min_repeats=5, min_time_s=0.005, max_repeats=50, timeout_s=20.0)
MATMUL = cc.make_workload("matmul", {"M": 32, "N": 32, "K": 32})


def matmul_task(task_id: str = "mm", config: dict | None = None) -> Task:
    config = config if config is not None else cc.default_config(MATMUL, cc.cpu_target())
    return Task(task_id, 1, "job", MATMUL.key, cc.config_key(config), OPTS)


def fault_task(mode: str, timeout_s: float = 20.0) -> Task:
    opts = MeasureOptions(warmup=1, min_repeats=3, min_time_s=0.0, max_repeats=10, timeout_s=timeout_s)
    return Task(f"fault-{mode}", 1, "job", f"fault(mode={mode},n=16,dtype=float32)", "{}", opts)


@pytest.fixture(scope="module")
def sandbox():
    box = Sandbox("cpu", (PLUGIN,))
    box.wait_ready()
    yield box
    box.close()


def assert_measured(result) -> None:
    assert result.status == Status.OK, result.error
    assert len(result.samples_s) >= OPTS.min_repeats
    assert result.ci_low_s <= result.median_s <= result.ci_high_s
    assert min(result.samples_s) == pytest.approx(sorted(result.samples_s)[0])
    # (not compared with this process's codegen_version(): the worker hashes compiler_core's source on its own)
    assert len(result.codegen_version) == 16 and int(result.codegen_version, 16) >= 0
    assert result.max_abs_error < 1e-3 and result.compile_s >= 0


def test_a_real_matmul_is_verified_and_measured(sandbox):
    assert_measured(sandbox.run(matmul_task()))


def test_a_segfault_is_a_runtime_error_and_the_next_task_still_runs(sandbox):
    pid = sandbox.pid
    result = sandbox.run(fault_task("segfault"))
    assert result.status == Status.RUNTIME_ERROR
    assert "SIGSEGV" in result.error
    assert sandbox.pid != pid  # a fresh worker was started
    assert_measured(sandbox.run(matmul_task("after-segfault")))


def test_an_infinite_loop_is_a_timeout_within_the_limit_and_the_next_task_still_runs(sandbox):
    t0 = time.monotonic()
    result = sandbox.run(fault_task("hang", timeout_s=2.0))
    elapsed = time.monotonic() - t0
    assert result.status == Status.TIMEOUT
    assert 2.0 <= elapsed <= 2.0 + PIPE_SLACK_S + 1.0
    assert_measured(sandbox.run(matmul_task("after-hang")))


def test_a_wrong_answer_is_never_timed_and_the_worker_goes_on(sandbox):
    pid = sandbox.pid
    result = sandbox.run(fault_task("wrong"))
    assert result.status == Status.WRONG_ANSWER
    assert result.samples_s == () and "elements wrong" in result.error
    assert result.max_abs_error == pytest.approx(1.0, abs=1e-6)
    assert sandbox.pid == pid  # nothing crashed: same worker
    assert_measured(sandbox.run(matmul_task("after-wrong")))


def test_a_worker_killed_while_idle_is_replaced_before_the_next_task(sandbox):
    pid = sandbox.pid
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)
    assert_measured(sandbox.run(matmul_task("after-idle-kill")))  # not blamed on the innocent task
    assert sandbox.pid != pid


def test_the_fault_plugins_ok_mode_is_measured(sandbox):
    result = sandbox.run(fault_task("ok"))
    assert result.status == Status.OK and len(result.samples_s) >= 3


def test_a_plugin_that_fails_to_import_stops_the_worker_from_starting():
    box = Sandbox("cpu", ("tests.no_such_plugin_module",), start_timeout_s=60)
    try:
        with pytest.raises(WorkerStartError, match="no_such_plugin_module"):
            box.wait_ready()
    finally:
        box.close()


# ---- build failures (in-process: no kernel runs) -----------------------------------------------------------

def test_an_invalid_config_is_a_compile_error_without_running():
    result, healthy = execute(matmul_task("bad", {"nope": 1}), "cpu")
    assert result.status == Status.COMPILE_ERROR and "invalid task" in result.error and healthy
    result, _ = execute(Task("bad-json", 1, "job", MATMUL.key, "{not json", OPTS), "cpu")
    assert result.status == Status.COMPILE_ERROR
    result, _ = execute(Task("bad-key", 1, "job", "no_such_op(M=1)", "{}", OPTS), "cpu")
    assert result.status == Status.COMPILE_ERROR and "unknown op" in result.error


def test_error_classes_map_to_statuses():
    assert classify_build_error(cc.ResourceError("too many threads"))[0] == Status.RESOURCE_EXCEEDED
    assert classify_build_error(cc.ConfigError("bad knob"))[0] == Status.COMPILE_ERROR
    assert classify_build_error(cc.BuildError("cc failed"))[0] == Status.COMPILE_ERROR
    assert classify_build_error(NotImplementedError("lowering"))[0] == Status.COMPILE_ERROR


def test_every_status_has_a_proto_enum_value():
    for status in Status:
        assert tunefarm_pb2.TrialStatus.Value(status.value) > 0


# ---- the build pool and the runner -------------------------------------------------------------------------

def test_prebuild_warms_the_c_cache_and_classifies_failures():
    built = prebuild(matmul_task(), "c", "")
    assert built.status is None and built.compile_s > 0 and built.cubin is None
    bad = prebuild(matmul_task("bad", {"nope": 1}), "c", "")
    assert bad.status == Status.COMPILE_ERROR


def test_runner_builds_ahead_in_the_pool_then_measures_in_the_worker(sandbox):
    done = []
    pool = BuildPool("c", "", workers=2, plugins=(PLUGIN,))
    runner = TaskRunner(sandbox, pool, done.append)
    try:
        good = matmul_task("pooled", one_vector_microkernel(MATMUL, cc.cpu_target()))
        bad = matmul_task("pooled-bad", {"nope": 1})
        runner.prebuild([good, bad])
        assert_measured(runner.run_one(good))
        failed = runner.run_one(bad)  # the pool's failure is reported as is: the worker never sees it
        assert failed.status == Status.COMPILE_ERROR and failed.samples_s == ()
        runner.start(fault_task("ok"))
        deadline = time.monotonic() + 30
        while not done and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [r.status for r in done] == [Status.OK]
    finally:
        pool.close()


# ---- the fingerprint ---------------------------------------------------------------------------------------

def test_cpu_fingerprint_fills_the_proto_fields():
    info = fp.fingerprint("cpu")
    assert info["kind"] == "cpu" and info["compute_units"] >= 1 and info["memory_bytes"] > 0
    assert info["arch"] and info["model"]
    assert set(info["isa_flags"]) <= set(fp.ISA_FLAGS)
    tunefarm_pb2.DeviceFingerprint(**info)  # every key is a proto field of the right type


def test_device_names_are_checked():
    assert fp.parse_device("cuda:3") == ("cuda", 3)
    with pytest.raises(fp.FingerprintError, match="expected 'cpu' or 'cuda:N'"):
        fp.parse_device("gpu0")


def test_isa_flags_from_cpuinfo_lines():
    assert fp.isa_flags({"flags": "fpu sse4_2 avx avx2 fma avx512f"}) == ["sse4_2", "avx", "avx2", "fma", "avx512f"]
    assert fp.isa_flags({"Features": "fp asimd sve"}) == ["neon", "sve"]


def test_cuda_fingerprint_without_pycuda_or_gpu_is_a_clear_error():
    if cc_cuda_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(fp.FingerprintError, match="cuda:0"):
        fp.fingerprint("cuda:0")


def cc_cuda_available() -> bool:
    from compiler_core.runtime.cuda_runtime import cuda_available

    return cuda_available()


@pytest.mark.gpu
def test_cuda_task_is_built_with_nvcc_verified_and_timed_with_events():
    info = fp.fingerprint("cuda:0")
    w = cc.make_workload("matmul", {"M": 256, "N": 256, "K": 256})
    task = Task("gpu-mm", 1, "job", w.key, cc.config_key(cc.default_config(w, cc.cuda_target(info["arch"]))),
                MeasureOptions(warmup=2, min_repeats=10, min_time_s=0.0, max_repeats=50, timeout_s=60,
                               flush_cache=True))
    built = prebuild(task, "cuda", info["arch"])
    assert built.status is None and built.cubin
    result, healthy = execute(task, "cuda:0", built.cubin, built.compile_s)
    assert result.status == Status.OK, result.error
    assert healthy and len(result.samples_s) >= 10 and result.ci_low_s <= result.median_s <= result.ci_high_s


@pytest.mark.gpu
def test_cuda_faults_are_classified_and_the_worker_is_replaced():
    box = Sandbox("cuda:0", (PLUGIN,))
    try:
        box.wait_ready()
        crashed = box.run(fault_task("segfault"))
        assert crashed.status == Status.RUNTIME_ERROR and "illegal" in crashed.error.lower()
        assert box.run(fault_task("hang", timeout_s=3.0)).status == Status.TIMEOUT
        assert box.run(fault_task("wrong")).status == Status.WRONG_ANSWER
        assert box.run(fault_task("ok")).status == Status.OK
        assert box.restarts == 2
    finally:
        box.close()
