"""tunefarm_client against the real app (FastAPI's TestClient as its transport, SQLite): every method, its
errors, and load_best building and running the head schedule as a C kernel."""
from __future__ import annotations

import json

import numpy as np
import pytest

import compiler_core as cc
import tunefarm_client.loader as loader_module
from tests.cpu.rest_support import ADMIN, CPU_CLASS, MATMUL, MATMUL_KEY, READER, make_farm
from tunefarm_client import CodegenVersionMismatch, LoadError, TunefarmClient, TunefarmError, load_best
from tunefarm_client.retrying import RetryPolicy
from tuner_server import measure_policy
from tuner_server.api.schemas import TargetPublic
from tuner_server.db import make_engine, make_session_factory, upgrade_to_head


@pytest.fixture
def farm(tmp_path):
    url = f"sqlite:///{tmp_path / 'farm.db'}"
    upgrade_to_head(url)
    engine = make_engine(url)
    yield make_farm(make_session_factory(engine))
    engine.dispose()


@pytest.fixture
def admin(farm):
    return TunefarmClient("http://testserver", ADMIN, http=farm.client)


@pytest.fixture
def reader(farm):
    return TunefarmClient("http://testserver", READER, http=farm.client)


def test_reads(farm, reader):
    assert reader.health().status == "ok"
    ops = reader.ops()
    assert ops.total == len(cc.OPS) and "random" in ops.strategies
    assert reader.devices().items[0].device_class == CPU_CLASS
    job = reader.job(farm.seeded["job_id"])
    assert job.state == "done" and job.progress.best.median_s == 1e-4
    assert reader.jobs(state="done").total == 1
    assert job.result.head_median_s == pytest.approx(1e-4) and job.result.speedup_vs_default.ratio == pytest.approx(3)
    finals = [c for c in reader.job_comparisons(job.id) if c.purpose == "final"]
    assert [c.outcome for c in finals] == ["kept", "kept"] and finals[-1].reference == "numpy"
    trials = reader.job_trials(job.id, status="OK", limit=2)
    assert (trials.total, len(trials.items)) == (3, 2)
    assert "tunefarm_http_request_duration_seconds" in reader.metrics()


def test_jobs_lifecycle(farm, admin):
    job = admin.create_job("matmul", MATMUL, "cpu", 4, strategy="grid", seed=1, measure={"warmup": 0})
    assert (job.state, job.workload, job.phase) == ("queued", MATMUL_KEY, "search")
    assert job.measure_options == {**measure_policy.DEFAULTS["cpu"], "warmup": 0}
    assert farm.driver.wakes == 1
    assert admin.cancel_job(job.id).state == "cancelled"
    assert admin.wait_for_job(job.id, timeout_s=1).state == "cancelled"


def test_best_history_diff_rollback_pin(admin):
    best = admin.best("matmul", MATMUL, CPU_CLASS, include_source=True)
    assert best.version == 3 and best.source and best.gflops > 0
    assert admin.best("matmul", MATMUL, CPU_CLASS, as_of=best.created_at).version == 3
    assert admin.best("matmul", MATMUL, CPU_CLASS, version=1).median_s == 3e-4
    assert [v.version for v in admin.history("matmul", MATMUL, CPU_CLASS).items] == [3, 2, 1]
    assert admin.diff("matmul", MATMUL, CPU_CLASS, 1, 3).median_ratio == pytest.approx(1 / 3)
    assert admin.rollback("matmul", MATMUL, CPU_CLASS, 2, message="why not").reason == "rollback"
    assert admin.pin("matmul", MATMUL, CPU_CLASS, 3).pinned is True
    assert admin.pin("matmul", MATMUL, CPU_CLASS, None).pinned is False


def test_pin_a_trial(farm, admin):
    first = farm.seeded["trials"][0]
    pinned = admin.pin("matmul", MATMUL, CPU_CLASS, None, trial_id=first, message="the default again")
    assert (pinned.trial_id, pinned.pinned, pinned.message) == (first, True, "the default again")
    with pytest.raises(TunefarmError) as both:
        admin.pin("matmul", MATMUL, CPU_CLASS, 1, trial_id=first)
    assert both.value.status == 422 and "not both" in str(both.value)


def test_export_and_import(admin):
    lines = list(admin.export(workload=MATMUL_KEY))
    assert json.loads(lines[0])["type"] == "header" and len(lines) > 5
    assert admin.import_lines(lines).duplicate_trials == 3
    assert admin.import_lines("\n".join(lines)).trials == 0


def test_errors_carry_the_servers_message(farm, admin, reader):
    with pytest.raises(TunefarmError) as bad_op:
        admin.create_job("matmull", MATMUL, "cpu", 4)
    assert bad_op.value.status == 422 and "body.op" in str(bad_op.value) and "(got 'matmull')" in str(bad_op.value)
    assert str(bad_op.value).startswith("POST /v1/jobs -> 422:")
    with pytest.raises(TunefarmError) as forbidden:
        reader.create_job("matmul", MATMUL, "cpu", 4)
    assert forbidden.value.status == 403 and "admin token" in forbidden.value.error
    with pytest.raises(TunefarmError) as unknown:
        reader.best("matmul", MATMUL, "cpu-arm-neon-1c")
    assert unknown.value.status == 422 and unknown.value.detail == {"known_device_classes": [CPU_CLASS]}
    with pytest.raises(TunefarmError) as export_error:
        list(reader.export(op="nope"))
    assert export_error.value.status == 422
    with pytest.raises(TunefarmError) as missing:
        TunefarmClient("http://testserver", None, http=farm.client).jobs()
    assert missing.value.status == 401


def test_unreachable_server_is_a_clear_error_after_the_retry_budget():
    waits: list[float] = []
    retry = RetryPolicy(budget_s=1.0, sleep=waits.append)
    with TunefarmClient("http://127.0.0.1:9", "t", timeout=2, retry=retry) as client, \
            pytest.raises(TunefarmError) as err:
        client.health()
    assert err.value.status is None and "cannot reach the tunefarm server" in str(err.value)
    assert waits == [0.5, 0.5]  # the second wait is what was left of the budget


def test_load_best_builds_the_head_and_it_computes_matmul(reader, tmp_path):
    kernel = load_best(reader, "matmul", MATMUL, CPU_CLASS, cache_dir=tmp_path)
    assert kernel.schedule.version == 3 and kernel.kernel.config == kernel.schedule.config
    workload = cc.parse_key(MATMUL_KEY)
    inputs = cc.random_inputs(workload, seed=0)
    outputs = kernel.run(*inputs)
    assert cc.verify(workload, outputs, cc.expect(workload, inputs)).ok
    c = np.zeros((64, 64), np.float32)
    kernel(*inputs, c)
    np.testing.assert_allclose(c, outputs[0])


def test_load_best_refuses_another_codegen_version(reader, monkeypatch, tmp_path):
    monkeypatch.setattr(cc, "codegen_version", lambda: "0123456789abcdef")
    with pytest.raises(CodegenVersionMismatch) as err:
        load_best(reader, "matmul", MATMUL, CPU_CLASS)
    message = str(err.value)
    assert "0123456789abcdef" in message and "allow_version_mismatch=True" in message and "measured with" in message
    with pytest.warns(UserWarning, match="different code generator"):
        kernel = load_best(reader, "matmul", MATMUL, CPU_CLASS, allow_version_mismatch=True, cache_dir=tmp_path)
    assert kernel.source


def test_load_best_checks_the_machine_and_takes_a_target(reader, monkeypatch, tmp_path):
    # the host's ISAs are cached at their first reading: read them before platform.machine lies, or the cache
    # would hold the fake machine's for every later test of this process (as it did when this test ran first)
    cc.cpu_target()
    monkeypatch.setattr(loader_module.platform, "machine", lambda: "aarch64")
    with pytest.raises(LoadError, match="pass target="):
        load_best(reader, "matmul", MATMUL, CPU_CLASS)
    here = cc.cpu_target(isa="avx2", cores=1)  # the class's ISA (its configs are AVX2's), which every CI host runs
    kernel = load_best(reader, "matmul", MATMUL, CPU_CLASS, target=here, cache_dir=tmp_path)
    assert kernel.kernel.target.cores == 1
    with pytest.raises(TunefarmError, match="no best schedule"):
        load_best(reader, "matmul", {**MATMUL, "K": 32}, CPU_CLASS)


def test_a_cuda_schedule_needs_a_cuda_device_here(reader):
    from compiler_core.runtime.cuda_runtime import cuda_available

    if cuda_available():
        pytest.skip("this machine has a CUDA device")
    best = reader.best("matmul", MATMUL, CPU_CLASS)
    cuda = best.model_copy(update={"device_class": "cuda-nvidia-h100-sm90",
                                   "target": TargetPublic(**cc.cuda_target("sm_90").__dict__)})
    with pytest.raises(LoadError, match="no CUDA device or pycuda here"):
        loader_module.tuned_target(cuda)
