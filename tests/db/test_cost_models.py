"""Cost-model state: cached feature vectors, the trials a device class trains on, and versioned models."""
from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import func, inspect, select

import compiler_core as cc
from tests.db.conftest import BACKENDS, new_database_url
from tests.db.factories import MATMUL, SOFTMAX, at, cuda_fingerprint, device, trial
from tuner_server import repo
from tuner_server.db import make_engine, upgrade_to_head
from tuner_server.db.migrate import migrate
from tuner_server.db.models import ConfigFeatures, CostModelRecord

FS = "ir-v1/cpu/cg1"


def _vector(seed: int, n: int = 16) -> bytes:
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32).tobytes()


def _key(config: dict) -> str:
    return cc.config_key(config)


def _stored(session) -> int:
    return session.scalar(select(func.count()).select_from(ConfigFeatures))


def test_features_round_trip_as_float32(session):
    repo.get_or_create_workload(MATMUL, session=session)
    repo.get_or_create_workload(SOFTMAX, session=session)
    rows = [(MATMUL, FS, _key({"tile": t}), _vector(t)) for t in (1, 2, 4)] + [(SOFTMAX, FS, "{}", _vector(9))]
    assert repo.put_features(rows, session=session) == 4
    got = repo.get_features(MATMUL, FS, [_key({"tile": t}) for t in (1, 2, 4, 8)], session=session)
    assert sorted(got) == sorted(_key({"tile": t}) for t in (1, 2, 4))  # tile 8 was never featurized
    for t in (1, 2, 4):
        stored = np.frombuffer(got[_key({"tile": t})], dtype=np.float32)
        assert np.array_equal(stored, np.frombuffer(_vector(t), dtype=np.float32))
    assert repo.get_features(SOFTMAX, "another-set", ["{}"], session=session) == {}
    assert repo.get_features("softmax(rows=8,cols=8,dtype=float32)", FS, ["{}"], session=session) == {}


def test_duplicate_features_are_ignored(session):
    repo.get_or_create_workload(MATMUL, session=session)
    first = (MATMUL, FS, _key({"tile": 1}), _vector(1))
    assert repo.put_features([first, first, (MATMUL, FS, _key({"tile": 1}), _vector(2))], session=session) == 1
    assert repo.put_features([first, (MATMUL, FS, _key({"tile": 2}), _vector(2))], session=session) == 1
    assert repo.put_features([(MATMUL, "other-set", _key({"tile": 1}), _vector(3))], session=session) == 1
    assert _stored(session) == 3
    assert repo.get_features(MATMUL, FS, [_key({"tile": 1})], session=session) == {_key({"tile": 1}): _vector(1)}


def test_unknown_workload_stores_nothing(session):
    repo.get_or_create_workload(MATMUL, session=session)
    rows = [(MATMUL, FS, "{}", _vector(1)), (SOFTMAX, FS, "{}", _vector(2))]
    with pytest.raises(repo.NotFound, match=r"softmax\(rows=128"):
        repo.put_features(rows, session=session)
    assert _stored(session) == 0


def test_thousands_of_features_in_chunks(session):
    repo.get_or_create_workload(MATMUL, session=session)
    keys = [_key({"tile": i}) for i in range(1200)]  # more than two IN-list chunks
    assert repo.put_features([(MATMUL, FS, k, _vector(i, 4)) for i, k in enumerate(keys)], session=session) == 1200
    assert repo.put_features([(MATMUL, FS, k, _vector(0, 4)) for k in keys[:700]], session=session) == 0
    got = repo.get_features(MATMUL, FS, keys, session=session)
    assert len(got) == 1200 and got[keys[1100]] == _vector(1100, 4)


def _training_set(session) -> tuple[str, str]:
    """CPU trials on two workloads (one failure, one lost agent) and one CUDA trial; features for some."""
    cpu, cuda = device(session), device(session, cuda_fingerprint())
    trial(session, cpu, {"tile": 1}, median=3e-3, now=at(1))
    trial(session, cpu, {"tile": 2}, status="COMPILE_ERROR", now=at(2))
    trial(session, cpu, {"tile": 4}, status="AGENT_LOST", now=at(3))
    trial(session, cpu, {"rows_per_block": 2}, key=SOFTMAX, median=1e-4, now=at(4))
    trial(session, cuda, {"tile": 1}, median=1e-5, now=at(5))
    trial(session, cpu, {"tile": 8}, median=2e-3, now=at(6))
    repo.put_features([(MATMUL, FS, _key({"tile": 1}), _vector(1)), (MATMUL, FS, _key({"tile": 4}), _vector(4)),
                       (SOFTMAX, FS, _key({"rows_per_block": 2}), _vector(5)),
                       (MATMUL, "other-set", _key({"tile": 8}), _vector(8))], session=session)
    return cpu, cuda


def test_training_trials_join_features_across_workloads(session):
    cpu, _ = _training_set(session)
    rows = repo.class_training_trials(cpu, FS, session=session)
    assert [(r.workload_key, r.config, r.status) for r in rows] == [
        (MATMUL, {"tile": 1}, "OK"), (MATMUL, {"tile": 2}, "COMPILE_ERROR"),
        (SOFTMAX, {"rows_per_block": 2}, "OK"), (MATMUL, {"tile": 8}, "OK")]  # no AGENT_LOST, no CUDA trial
    assert [r.vector for r in rows] == [_vector(1), None, _vector(5), None]  # tile 8 has features in another set
    assert [r.created_at for r in rows] == [at(1), at(2), at(4), at(6)]
    assert (rows[0].median_s, rows[1].median_s, rows[0].config_key) == (3e-3, None, _key({"tile": 1}))
    assert repo.count_class_trials(cpu, session=session) == 4


def test_training_trials_since_and_limit_keep_the_newest(session):
    cpu, cuda = _training_set(session)
    since = repo.class_training_trials(cpu, FS, session=session, since=at(2))
    assert [r.created_at for r in since] == [at(4), at(6)]  # strictly after `since`
    assert repo.count_class_trials(cpu, session=session, since=at(2)) == 2
    newest = repo.class_training_trials(cpu, FS, session=session, limit=2)
    assert [r.config for r in newest] == [{"rows_per_block": 2}, {"tile": 8}]
    assert [r.median_s for r in repo.class_training_trials(cuda, FS, session=session)] == [1e-5]
    assert repo.class_training_trials("cpu-unknown", FS, session=session) == []


def _save(session, dclass: str, blob: bytes, feature_set: str = FS, keep: int = 3):
    return repo.save_cost_model(dclass, feature_set, blob, objective="lambdarank", trained_on=len(blob),
                                workloads=2, newest_trial_at=at(len(blob)), fit_s=0.25, session=session, keep=keep)


def test_cost_model_versions_keep_the_newest_three(session):
    cpu = device(session)
    blobs = [bytes([v]) * (1000 * v) + b"\x00\xff" for v in (1, 2, 3, 4)]  # NUL and high bytes survive
    assert [_save(session, cpu, b).version for b in blobs] == [1, 2, 3, 4]
    other = _save(session, cpu, b"other", feature_set="other-set")
    assert other.version == 1
    stored = session.scalars(select(CostModelRecord.version).where(CostModelRecord.feature_set == FS)).all()
    assert sorted(stored) == [2, 3, 4]
    session.expire_all()
    latest = repo.latest_cost_model(cpu, FS, session=session)
    assert (latest.version, latest.objective, latest.trained_on, latest.workloads, latest.fit_s) == (
        4, "lambdarank", len(blobs[3]), 2, 0.25)
    assert bytes(latest.blob) == blobs[3] and latest.newest_trial_at == at(len(blobs[3]))
    assert repo.latest_cost_model(cpu, "never-fitted", session=session) is None
    listed = repo.list_cost_models(session=session, device_class=cpu)
    assert [(m.feature_set, m.version) for m in listed] == [("other-set", 1), (FS, 4), (FS, 3), (FS, 2)]
    assert repo.list_cost_models(session=session, device_class="cpu-unknown") == []


def test_cost_model_of_an_unknown_class_is_not_found(session):
    with pytest.raises(repo.NotFound, match="cpu-unknown"):
        _save(session, "cpu-unknown", b"model")
    with pytest.raises(repo.InvalidRequest, match="keep"):
        _save(session, device(session), b"model", keep=0)


@pytest.fixture(params=BACKENDS)
def empty_url(request, tmp_path_factory):
    return new_database_url(request.param, request, tmp_path_factory)


def test_downgrade_drops_the_cost_model_tables(empty_url):
    upgrade_to_head(empty_url)
    migrate(empty_url, "0001", down=True)
    engine = make_engine(empty_url)
    try:
        with engine.connect() as conn:
            tables = set(inspect(conn).get_table_names())
        assert "trials" in tables and not tables & {"config_features", "cost_models"}
    finally:
        engine.dispose()
    upgrade_to_head(empty_url)  # and back up again
