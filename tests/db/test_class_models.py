"""Device-class cost models: featurized and fitted from the class's trials, persisted, reloaded after a restart."""
from __future__ import annotations

import random

import numpy as np
import pytest
from sqlalchemy import func, select

import compiler_core as cc
from tests.db.factories import at, cpu_fingerprint, device, trial
from tuner_server import repo
from tuner_server.class_models import ClassModels
from tuner_server.cost_model import FeatureCache, LoweredFeatures
from tuner_server.cost_model.feature_pool import FeaturePool
from tuner_server.cost_model.featurize import feature_set
from tuner_server.db import session_scope
from tuner_server.db.models import ConfigFeatures, CostModelRecord
from tuner_server.targets import target_for_class

TARGET1 = cc.cpu_target(isa="avx2", cores=1)  # what cpu_fingerprint(cores=1)'s agent registers

SHAPES = ((64, 96), (128, 64))


def _runtime(workload: cc.Workload, config: dict) -> float:
    """A deterministic landscape that depends on the config (what a model can learn)."""
    values = [v for v in config.values() if isinstance(v, int) and not isinstance(v, bool)]
    return 1e-4 * (1 + sum(abs(np.log2(max(v, 1)) - 2) for v in values)) * dict(workload.params)["rows"] / 64


def _populate(session_factory, per_shape: int = 20) -> str:
    with session_scope(session_factory) as s:
        dclass = device(s, cpu_fingerprint(cores=1))
        target = target_for_class(dclass, session=s)
        for i, (rows, cols) in enumerate(SHAPES):
            w = cc.make_workload("softmax", {"rows": rows, "cols": cols})
            for j, config in enumerate(cc.get_space(w, target).sample(random.Random(i), per_shape)):
                failed = j % 7 == 3
                trial(s, dclass, config, key=w.key, status="COMPILE_ERROR" if failed else "OK",
                      median=_runtime(w, config), now=at(100 * i + j))
    return dclass


def _count(session_factory, model) -> int:
    with session_scope(session_factory) as s:
        return s.scalar(select(func.count()).select_from(model))


def test_a_pass_featurizes_fits_and_persists_a_model_that_a_restart_reloads(session_factory):
    dclass = _populate(session_factory)
    keeper = ClassModels(session_factory, min_trials=16)
    summary = keeper.refresh()
    assert summary.stored[dclass] == 2 * 20 and summary.fitted[dclass] == 2 * 20
    assert _count(session_factory, ConfigFeatures) == 40 and _count(session_factory, CostModelRecord) == 1
    model = keeper.model(dclass)
    assert model is not None and model.trained

    again = keeper.refresh()  # nothing new: no lowering, no refit
    assert again.stored[dclass] == 0 and dclass not in again.fitted

    restarted = ClassModels(session_factory)
    reloaded = restarted.model(dclass)
    w = cc.make_workload("softmax", {"rows": 256, "cols": 96})
    X = LoweredFeatures(w.key, TARGET1, FeatureCache())(
        cc.get_space(w, TARGET1).sample(random.Random(5), 30))
    np.testing.assert_allclose(reloaded.predict(X), model.predict(X))
    with session_scope(session_factory) as s:
        record = repo.latest_cost_model(dclass, feature_set(TARGET1), session=s)
        assert (record.version, record.trained_on, record.workloads) == (1, 40, 2)


def test_a_model_is_refitted_only_once_the_trials_grew(session_factory):
    dclass = _populate(session_factory, per_shape=10)
    keeper = ClassModels(session_factory, min_trials=16, growth=0.5)
    assert keeper.refresh().fitted == {dclass: 20}
    with session_scope(session_factory) as s:  # 5 more trials: +25 % < the 50 % growth asked for
        w = cc.make_workload("softmax", {"rows": 64, "cols": 96})
        for j, config in enumerate(cc.get_space(w, TARGET1).sample(random.Random(9), 40)[-5:]):
            trial(s, dclass, config, key=w.key, median=_runtime(w, config), now=at(1000 + j))
    assert keeper.refresh().fitted == {}
    with session_scope(session_factory) as s:
        for j, config in enumerate(cc.get_space(w, TARGET1).sample(random.Random(9), 40)[-10:-5]):
            trial(s, dclass, config, key=w.key, median=_runtime(w, config), now=at(2000 + j))
    assert keeper.refresh().fitted == {dclass: 30}
    with session_scope(session_factory) as s:
        assert repo.latest_cost_model(dclass, feature_set(TARGET1), session=s).version == 2


def test_too_few_trials_give_no_model(session_factory):
    dclass = _populate(session_factory, per_shape=4)
    keeper = ClassModels(session_factory, min_trials=16)
    assert keeper.refresh().fitted == {} and keeper.model(dclass) is None


@pytest.mark.slow
def test_with_a_feature_pool_the_pass_never_lowers_and_stores_once_ready(session_factory):
    dclass = _populate(session_factory, per_shape=10)
    pool = FeaturePool(workers=1)
    try:
        keeper = ClassModels(session_factory, pool=pool, min_trials=16, cache=FeatureCache())
        first = keeper.refresh()
        assert first.stored[dclass] == 0 and first.fitted == {}  # asked the pool, did not wait for it
        assert pool.wait(timeout_s=120)
        second = keeper.refresh()
        assert second.stored[dclass] == 20 and second.fitted == {dclass: 20}
    finally:
        pool.close()

    restarted = ClassModels(session_factory)
    assert restarted.warm_cache(dclass, cc.make_workload("softmax", {"rows": 64, "cols": 96}).key,
                                [{"not": "measured"}]) == 0


def test_the_driver_starts_model_jobs_from_the_class_model(session_factory, tmp_path):
    from tuner_server.driver import JobDriver
    from tuner_server.repo import JobSpec
    from tuner_server.settings import Settings

    dclass = _populate(session_factory)
    keeper = ClassModels(session_factory, min_trials=16)
    keeper.refresh()
    w = cc.make_workload("softmax", {"rows": 256, "cols": 96})
    with session_scope(session_factory) as s:
        model_job = repo.create_job(JobSpec(w.key, dclass, 8, strategy="model"), session=s).id
        random_job = repo.create_job(JobSpec(w.key, dclass, 8, strategy="random"), session=s).id
        cold_job = repo.create_job(JobSpec(w.key, dclass, 8, strategy="model", strategy_options={"transfer": False}),
                                   session=s).id
    driver = JobDriver(session_factory, Settings(data_dir=tmp_path), class_models=keeper)
    driver.tick()
    assert driver._plans[model_job].strategy.inner.context.cost_model is keeper.model(dclass)
    assert not hasattr(driver._plans[random_job].strategy.inner, "context")
    with session_scope(session_factory) as s:
        assert repo.job_progress(model_job, session=s).queued == 8
        # the job's record says what its search started from; a job that declines the model, or has none, says so
        started = {j: repo.get_job(j, session=s).start_model for j in (model_job, random_job, cold_job)}
    assert started == {model_job: {"device_class": dclass, "version": 1, "trained_on": 40}, random_job: None,
                       cold_job: None}


def test_a_class_with_little_history_starts_from_a_richer_class_of_its_kind(session_factory, monkeypatch, tmp_path):
    import tuner_server.class_models as class_models
    from tests.db.factories import cuda_fingerprint
    from tuner_server.api.views import job_public
    from tuner_server.driver import JobDriver
    from tuner_server.repo import JobSpec
    from tuner_server.settings import Settings

    rich = _populate(session_factory)  # 40 trials, AVX2, one core
    with session_scope(session_factory) as s:
        new = device(s, cpu_fingerprint(cores=2, isa=("avx2", "avx512f")))  # another CPU class, no history
        gpu = device(s, cuda_fingerprint())
    keeper = ClassModels(session_factory, min_trials=16)
    keeper.refresh()
    donor = keeper.model(rich)
    start = keeper.start_model(new)  # warm start across classes of one kind
    assert start[:2] == (donor, rich) and start.record() == {"device_class": rich, "version": 1, "trained_on": 40}
    assert keeper.start_model(gpu) is None  # never across kinds
    assert keeper.start_model(rich)[:2] == (donor, rich)
    w = cc.make_workload("softmax", {"rows": 128, "cols": 96})
    with session_scope(session_factory) as s:  # a job on the new class: its record names the donor
        job_id = repo.create_job(JobSpec(w.key, new, 8, strategy="model"), session=s).id
    JobDriver(session_factory, Settings(data_dir=tmp_path), class_models=keeper).tick()
    with session_scope(session_factory) as s:
        shown = job_public(repo.get_job(job_id, session=s)).start_model
    assert (shown.device_class, shown.version, shown.trained_on) == (rich, 1, 40)
    monkeypatch.setattr(class_models, "OWN_HISTORY", 10)  # once a class has enough history, its own model
    with session_scope(session_factory) as s:
        w = cc.make_workload("softmax", {"rows": 64, "cols": 96})
        target = target_for_class(new, session=s)
        for j, config in enumerate(cc.get_space(w, target).sample(random.Random(3), 20)):
            trial(s, new, config, key=w.key, median=_runtime(w, config), now=at(3000 + j))
    keeper.refresh()
    own = keeper.model(new)
    assert own is not None and own is not donor and keeper.start_model(new)[:2] == (own, new)
    assert keeper.start_model(new).record() == {"device_class": new, "version": 1, "trained_on": 20}
