"""The isolated worker with real processes: a real kernel is measured; a segfault, an infinite loop and a wrong
answer (the fault plugin, a test double) become RUNTIME_ERROR, TIMEOUT and WRONG_ANSWER, and the worker keeps
serving the next task. Also the build pool, the runner, build-error classification and the fingerprint."""
from __future__ import annotations

import math
import os
import signal
import time
from pathlib import Path

import pytest

import compiler_core as cc
from device_agent import fingerprint as fp
from device_agent.baselines import QUIET_REFERENCE_ENV
from device_agent.host_lock import HostLock
from device_agent.prebuild import BuildPool, prebuild
from device_agent.records import MeasureOptions, Status, Task, TaskKind
from device_agent.runner import TaskRunner
from device_agent.sandbox import PIPE_SLACK_S, Sandbox, WorkerStartError
from device_agent.worker import WorkerSpec, classify_build_error, execute, make_bench
from device_agent.workload_data import WorkloadCache
from tests.space_configs import one_vector_microkernel
from tunefarm_proto import tunefarm_pb2

PLUGIN = "tests.fault_plugin"


def options(**given) -> MeasureOptions:
    """Short timings for tests; every field spelled out (the agent has no defaults)."""
    base = dict(warmup=1, min_repeats=5, min_time_s=0.005, max_repeats=50, timeout_s=20.0, flush_cache=False,
                max_time_s=0.5, target_rel_ci=0.5, max_contention=1.0)
    return MeasureOptions(**{**base, **given})


OPTS = options()
MATMUL = cc.make_workload("matmul", {"M": 32, "N": 32, "K": 32})


def matmul_task(task_id: str = "mm", config: dict | None = None) -> Task:
    config = config if config is not None else cc.default_config(MATMUL, cc.cpu_target())
    return Task(task_id, 1, "job", MATMUL.key, cc.config_key(config), OPTS)


def compare_task(task_id: str, candidate: dict, baseline: dict, reference: bool = True) -> Task:
    return Task(task_id, 1, "job", MATMUL.key, cc.config_key(candidate), OPTS, kind=TaskKind.COMPARE,
                baseline_config_json=cc.config_key(baseline), time_reference=reference)


def fault_task(mode: str, timeout_s: float = 20.0) -> Task:
    opts = options(min_repeats=3, min_time_s=0.0, max_repeats=10, timeout_s=timeout_s)
    return Task(f"fault-{mode}", 1, "job", f"fault(mode={mode},n=16,dtype=float32)", "{}", opts)


@pytest.fixture(scope="module")
def lock_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("locks"))


@pytest.fixture(scope="module")
def sandbox(lock_dir):
    box = Sandbox(WorkerSpec("cpu", (PLUGIN,), lock_dir=lock_dir))
    box.wait_ready()
    yield box
    box.close()


@pytest.fixture(scope="module")
def bench():
    """The worker's CPU bench in this process (in-process tests: build failures and verification)."""
    return make_bench(WorkerSpec("cpu"))


def assert_measured(result) -> None:
    assert result.status == Status.OK, result.error
    assert len(result.samples_s) >= OPTS.min_repeats
    assert result.ci_low_s <= result.median_s <= result.ci_high_s
    assert min(result.samples_s) == pytest.approx(sorted(result.samples_s)[0])
    # (not compared with this process's codegen_version(): the worker hashes compiler_core's source on its own)
    assert len(result.codegen_version) == 16 and int(result.codegen_version, 16) >= 0
    # verified on the random and the hard input sets (large magnitudes: the absolute error is not small there)
    assert math.isfinite(result.max_abs_error) and result.max_abs_error >= 0 and result.compile_s >= 0


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


def test_the_worker_starts_with_the_reference_librarys_threads_quiet(sandbox):
    """OpenBLAS reads its spin time when it loads: it must be in the worker's initial environment, or numpy's
    threads keep spinning on the cores while the kernel after it in a paired round is timed."""
    sandbox.wait_ready()
    environ = Path(f"/proc/{sandbox.pid}/environ").read_bytes().split(b"\0")
    for name, value in QUIET_REFERENCE_ENV.items():
        assert f"{name}={value}".encode() in environ


def test_the_fault_plugins_ok_mode_is_measured(sandbox):
    result = sandbox.run(fault_task("ok"))
    assert result.status == Status.OK and len(result.samples_s) >= 3


def test_a_compare_task_times_candidate_baseline_and_numpy_in_paired_rounds(sandbox):
    target = cc.cpu_target()
    default, other = cc.default_config(MATMUL, target), one_vector_microkernel(MATMUL, target)
    result = sandbox.run(compare_task("cmp", other, default))
    assert result.status == Status.OK, result.error
    n = len(result.samples_s)
    assert n >= OPTS.min_repeats and len(result.baseline_samples_s) == n and len(result.reference_samples_s) == n
    assert result.reference_name == "numpy" and result.threads >= 1 and result.cpus
    assert 0.0 <= result.contention <= 1.0
    plain = sandbox.run(compare_task("cmp-noref", other, default, reference=False))
    assert plain.status == Status.OK and plain.reference_samples_s == () and plain.reference_name == ""


def test_a_compare_whose_baseline_is_wrong_names_it_and_times_nothing(sandbox):
    task = Task("cmp-wrong", 1, "job", "fault(mode=ok,n=16,dtype=float32)", "{}", OPTS, kind=TaskKind.COMPARE,
                baseline_config_json="{}", time_reference=True)
    assert sandbox.run(task).status == Status.OK
    bad = Task("cmp-wrong2", 1, "job", "fault(mode=wrong,n=16,dtype=float32)", "{}", OPTS, kind=TaskKind.COMPARE,
               baseline_config_json="{}")
    result = sandbox.run(bad)
    assert result.status == Status.WRONG_ANSWER and result.error.startswith("candidate: ")
    assert result.samples_s == () and result.baseline_samples_s == ()


def test_a_measurement_waits_for_the_host_lock_and_times_out_if_it_never_frees(sandbox, lock_dir):
    holder = HostLock(lock_dir, "cpu")
    with holder.hold(5.0):
        t0 = time.monotonic()
        result = sandbox.run(Task("locked", 1, "job", MATMUL.key, matmul_task().config_json, options(timeout_s=2.5)))
        assert result.status == Status.TIMEOUT and "held by another measurement" in result.error
        assert time.monotonic() - t0 >= 1.0
    assert_measured(sandbox.run(matmul_task("after-lock")))


def test_a_task_without_measure_options_is_refused(bench):
    result, healthy = execute(Task("no-opts", 1, "job", MATMUL.key, matmul_task().config_json, None), bench,
                              WorkloadCache(None))
    assert result.status == Status.COMPILE_ERROR and "no measure options" in result.error and healthy
    bad = Task("bad-opts", 1, "job", MATMUL.key, matmul_task().config_json, options(min_repeats=0))
    result, _ = execute(bad, bench, WorkloadCache(None))
    assert result.status == Status.COMPILE_ERROR and "min_repeats" in result.error


class SilentKernel:
    """TEST DOUBLE: a 'kernel' that writes nothing, posing as the real one (same workload and tensors)."""

    def __init__(self, real: cc.Kernel) -> None:
        self.workload, self.specs = real.workload, real.specs

    def __call__(self, *arrays) -> None:
        pass


def test_a_kernel_that_writes_nothing_fails_even_right_after_a_correct_one(bench):
    cache = WorkloadCache(None)
    data = cache.get(MATMUL, 7)
    real = bench.build(MATMUL, cc.default_config(MATMUL, bench.target))
    assert bench.verify(real, data).ok
    check = bench.verify(SilentKernel(real), data)
    assert not check.ok and "random inputs" in check.message
    assert cache.get(MATMUL, 7) is data and cache.misses == 1  # inputs and references made once


def test_inputs_and_references_are_cached_on_disk_and_reused(tmp_path, monkeypatch):
    first = WorkloadCache(tmp_path)
    data = first.get(MATMUL, 3)
    files = sorted(tmp_path.glob("*.npz"))
    assert len(files) == len(data.sets) + 1 >= 3  # one file of every set's inputs, one per set's expectation
    assert not list(tmp_path.glob("*.tmp*"))

    def nothing_recomputed(*_args):
        raise AssertionError("recomputed although cached on disk")

    monkeypatch.setattr(cc, "input_sets", nothing_recomputed)
    monkeypatch.setattr(cc, "expect", nothing_recomputed)
    again = WorkloadCache(tmp_path).get(MATMUL, 3)
    for a, b in zip(data.sets, again.sets, strict=True):
        assert a.name == b.name
        for x, y in zip(a.inputs + a.expected.outputs + a.expected.tolerance,
                        b.inputs + b.expected.outputs + b.expected.tolerance, strict=True):
            assert x.dtype == y.dtype and (x == y).all()


def test_a_torn_cache_file_is_recomputed(tmp_path):
    data = WorkloadCache(tmp_path).get(MATMUL, 4)
    for f in tmp_path.glob("*.npz"):
        f.write_bytes(f.read_bytes()[:100])
    again = WorkloadCache(tmp_path).get(MATMUL, 4)
    assert all((x == y).all() for a, b in zip(data.sets, again.sets, strict=True)
               for x, y in zip(a.inputs, b.inputs, strict=True))


def test_a_plugin_that_fails_to_import_stops_the_worker_from_starting():
    box = Sandbox(WorkerSpec("cpu", ("tests.no_such_plugin_module",)), start_timeout_s=60)
    try:
        with pytest.raises(WorkerStartError, match="no_such_plugin_module"):
            box.wait_ready()
    finally:
        box.close()


# ---- build failures (in-process: no kernel runs) -----------------------------------------------------------

def test_an_invalid_config_is_a_compile_error_without_running(bench):
    cache = WorkloadCache(None)
    result, healthy = execute(matmul_task("bad", {"nope": 1}), bench, cache)
    assert result.status == Status.COMPILE_ERROR and "invalid task" in result.error and healthy
    result, _ = execute(Task("bad-json", 1, "job", MATMUL.key, "{not json", OPTS), bench, cache)
    assert result.status == Status.COMPILE_ERROR
    result, _ = execute(Task("bad-key", 1, "job", "no_such_op(M=1)", "{}", OPTS), bench, cache)
    assert result.status == Status.COMPILE_ERROR and "unknown op" in result.error
    result, _ = execute(compare_task("bad-baseline", cc.default_config(MATMUL, bench.target), {"nope": 1}), bench,
                        cache)
    assert result.status == Status.COMPILE_ERROR and "invalid task" in result.error


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
    built = prebuild(matmul_task(), cc.cpu_target())
    assert built.status is None and built.compile_s > 0 and built.cubins is None
    bad = prebuild(matmul_task("bad", {"nope": 1}), cc.cpu_target())
    assert bad.status == Status.COMPILE_ERROR


def test_runner_builds_ahead_in_the_pool_then_measures_in_the_worker(sandbox):
    done = []
    pool = BuildPool(cc.cpu_target(), workers=2, plugins=(PLUGIN,))
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


def test_the_pool_prepares_each_workloads_references_once_off_the_critical_path(tmp_path):
    ready = []
    pool = BuildPool(cc.cpu_target(), workers=2, cache_dir=str(tmp_path), on_ready=ready.append)
    try:
        pool.submit(matmul_task("a"))
        pool.submit(matmul_task("b", one_vector_microkernel(MATMUL, cc.cpu_target())))
        pool.wait_idle(60)
        pool.wait_prepared(MATMUL.key, 60)
        assert len(pool._prepared) == 1  # one preparation per workload, not per task
        files = sorted(tmp_path.glob("*.npz"))
        assert len(files) == len(cc.input_sets(MATMUL, 0)) + 1  # each set's expectation, and the inputs
        deadline = time.monotonic() + 10
        while len(ready) < 2 and time.monotonic() < deadline:  # callbacks run on the pool's thread
            time.sleep(0.01)
        assert sorted(ready) == ["a", "b"]  # each task said ready once: its build and its inputs are done
        cache = WorkloadCache(tmp_path)
        from device_agent.worker import input_seed
        cache.get(MATMUL, input_seed(matmul_task()))
        assert sorted(tmp_path.glob("*.npz")) == files  # the worker loads them: nothing recomputed or added
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


def test_a_class_is_named_for_the_isa_its_target_builds_for():
    """A host whose flags name a wider level than its compiler target reaches (a VM hiding one flag of x86-64-v3)
    lists no level above its target's: the tuner refuses a class named for code the agent does not build."""
    from tuner_server.device_class import best_isa
    from tuner_server.targets import isa_problem

    flags = ["sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16"]
    for isa in ("sse", "avx2", "avx512", "avx512bf16", "amx"):
        target = cc.cpu_target(isa=isa)
        named = best_isa(fp.within_target(flags, target))
        assert isa_problem(named, target) is None, (isa, named)
    assert fp.within_target(flags, cc.cpu_target(isa="avx2")) == ["sse4_2", "avx", "avx2", "fma"]
    info = fp.cpu_fingerprint()
    assert isa_problem(best_isa(info["isa_flags"]), cc.Target.from_dict(info["target"])) is None  # this host's


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
    target = cc.Target.from_dict(info["target"])
    task = Task("gpu-mm", 1, "job", w.key, cc.config_key(cc.default_config(w, target)),
                options(warmup=2, min_repeats=10, min_time_s=0.0, timeout_s=60, flush_cache=True))
    built = prebuild(task, target)
    assert built.status is None and built.cubins
    result, healthy = execute(task, make_bench(WorkerSpec("cuda:0")), WorkloadCache(None), built.cubins,
                              built.compile_s)
    assert result.status == Status.OK, result.error
    assert healthy and len(result.samples_s) >= 10 and result.ci_low_s <= result.median_s <= result.ci_high_s


@pytest.mark.gpu
def test_cuda_faults_are_classified_and_the_worker_is_replaced():
    box = Sandbox(WorkerSpec("cuda:0", (PLUGIN,)))
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


@pytest.mark.gpu
def test_cuda_compare_times_kernels_and_torch_and_verification_runs_on_the_device():
    info = fp.fingerprint("cuda:0")
    target = cc.cuda_target(info["arch"])
    w = cc.make_workload("matmul", {"M": 512, "N": 256, "K": 384})
    space = cc.get_space(w, target)
    default = cc.default_config(w, target)
    other = next(c for c in space if c != default)
    bench, cache = make_bench(WorkerSpec("cuda:0")), WorkloadCache(None)
    assert bench.checker is not None, "nvcc is on the GPU host: outputs are checked on the device"
    task = Task("gpu-cmp", 1, "job", w.key, cc.config_key(other), options(min_repeats=10, flush_cache=True),
                kind=TaskKind.COMPARE, baseline_config_json=cc.config_key(default), time_reference=True)
    result, healthy = execute(task, bench, cache)
    assert result.status == Status.OK and healthy, result.error
    n = len(result.samples_s)
    assert n >= 10 and len(result.baseline_samples_s) == n
    assert result.reference_name in ("torch", "") and len(result.reference_samples_s) in (0, n)
    data = cache.get(w, 0)
    real = bench.build(w, default)
    assert bench.verify(real, data).ok

    class Silent:  # TEST DOUBLE: launches nothing, so the outputs keep their NaN poison
        workload, specs = real.workload, real.specs
        module = real.module

        def launch_device(self, *args, **kwargs) -> None:
            pass

    check = bench.verify(Silent(), data)
    assert not check.ok and "random inputs" in check.message
