"""load_best on a real GPU: a CUDA head schedule served by the REST app is rebuilt here with pycuda and computes
the right answer. Marked gpu: skipped without a CUDA device and pycuda (run it on the device machine)."""
from __future__ import annotations

import pytest

import compiler_core as cc
from tunefarm_client import LoadError, TunefarmClient, load_best

pytestmark = pytest.mark.gpu
TOKEN = "tf_gpu_test_read_token_0123456789"


def _local_fingerprint() -> dict:
    from compiler_core.runtime.cuda_runtime import device_target, driver

    device = driver().Context.get_device()
    target = device_target()
    return {"kind": "cuda", "model": device.name(), "arch": target.arch, "compute_units": device.multiprocessor_count,
            "memory_bytes": device.total_memory(), "target": target.to_dict()}


@pytest.fixture
def farm(tmp_path):
    from fastapi.testclient import TestClient

    from tuner_server import repo
    from tuner_server.api.app import create_app
    from tuner_server.db import make_engine, make_session_factory, session_scope, upgrade_to_head
    from tuner_server.settings import Settings
    from tuner_server.targets import target_for_class

    url = f"sqlite:///{tmp_path / 'farm.db'}"
    upgrade_to_head(url)
    engine = make_engine(url)
    factory = make_session_factory(engine)
    heads = {}
    with session_scope(factory) as s:
        repo.register_token("reader", "read", TOKEN, session=s)
        registration = repo.register_agent(_local_fingerprint(), "gpu0", cc.codegen_version(), session=s)
        device_class, agent = registration.device_class, registration.agent
        for op, params in (("matmul", {"M": 256, "N": 192, "K": 128}), ("softmax", {"rows": 64, "cols": 1000})):
            workload = cc.make_workload(op, params)
            job = repo.create_job(repo.JobSpec(workload.key, "cuda", 1), session=s)
            target = target_for_class(device_class, session=s)
            repo.enqueue_configs(job.id, [cc.default_config(workload, target)], session=s)
            (task,) = repo.lease_tasks(agent.id, 1, session=s)
            report = repo.TrialReport(task.task_id, task.attempt, "OK", samples_s=(1e-5,), median_s=1e-5,
                                      codegen_version=cc.codegen_version())
            repo.record_result(agent.id, report, session=s)
            heads[op] = params
    client = TunefarmClient("http://testserver", TOKEN,
                            http=TestClient(create_app(Settings(database_url=url), factory, None)))
    yield client, device_class, heads
    engine.dispose()


@pytest.mark.parametrize("op", ["matmul", "softmax"])
def test_load_best_runs_the_cuda_head_through_pycuda(farm, op):
    client, device_class, heads = farm
    kernel = load_best(client, op, heads[op], device_class)
    assert kernel.kernel.target.kind == "cuda" and "__global__" in kernel.source
    workload = cc.make_workload(op, heads[op])
    inputs = cc.random_inputs(workload, seed=0)
    result = cc.verify(workload, kernel.run(*inputs), cc.expect(workload, inputs))
    assert result.ok, result.message


def test_a_schedule_for_another_gpu_arch_is_refused(farm):
    client, device_class, heads = farm
    best = client.best("matmul", heads["matmul"], device_class)
    other = "sm_80" if best.target.arch != "sm_80" else "sm_90"
    moved = best.model_copy(update={"target": best.target.model_copy(update={"arch": other})})
    from tunefarm_client.loader import tuned_target

    with pytest.raises(LoadError, match=f"tuned for {other}"):
        tuned_target(moved)
