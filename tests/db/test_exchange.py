"""Export -> import between farms: heads round-trip, trials deduplicate, malformed input writes nothing."""
from __future__ import annotations

import itertools
import json

import pytest
from sqlalchemy import func, select

import compiler_core as cc
from tests.db.conftest import new_database_url
from tests.db.factories import CPU_TARGET, MATMUL, SOFTMAX, T0, agent, at, compare, job, measure
from tuner_server import repo
from tuner_server.db import Base, make_engine, make_session_factory, upgrade_to_head
from tuner_server.repo import schedules

CLASS = "cpu-x86_64-avx2-2c"


@pytest.fixture
def other_session(request, backend, tmp_path_factory):
    """A session on a second, empty farm database of the same backend."""
    url = new_database_url("postgres" if backend == "postgresql" else "sqlite", request, tmp_path_factory)
    upgrade_to_head(url)
    engine = make_engine(url)
    with make_session_factory(engine)() as s:
        yield s
    engine.dispose()


def _job(session, budget: int, key: str = MATMUL, now=T0):
    """factories.job, with configs of the key's space on the agent's target (an import checks them)."""
    made = repo.create_job(repo.JobSpec(key, "cpu", budget), session=session, now=now)
    configs = list(itertools.islice(iter(cc.get_space(cc.parse_key(key), CPU_TARGET)), budget))
    repo.enqueue_configs(made.id, configs, session=session, now=now)
    return made


def _populate(session):
    """Two keys; one with improved + rollback + pin history, plus a failed trial."""
    ag = agent(session)
    _job(session, budget=2)
    measure(session, ag, [9e-3], now=at(1))
    measure(session, ag, [4e-3], now=at(2))  # challenges the 9 ms head
    assert compare(session, ag, 4 / 9, now=at(3)).promoted.version == 2
    _job(session, budget=2, key=SOFTMAX, now=at(3.5))
    measure(session, ag, [7e-3], now=at(4))  # softmax's first trial: its head
    (t,) = repo.lease_tasks(ag.id, 1, session=session, now=at(4.5))
    repo.record_result(ag.id, repo.TrialReport(t.task_id, t.attempt, "COMPILE_ERROR", error="nvcc: boom"),
                       session=session, now=at(4.5))
    schedules.rollback(MATMUL, CLASS, 1, session=session, author="alice", now=at(6))


def _heads(session) -> dict:
    out = {}
    for key in (MATMUL, SOFTMAX):
        h = schedules.head(key, CLASS, session=session)
        out[key] = None if h is None else (h.trial.config_key, h.trial.median_s, h.trial.created_at)
    return out


def _count(session, table: str) -> int:
    return session.scalar(select(func.count()).select_from(Base.metadata.tables[table]))


def test_export_then_import_into_an_empty_farm_round_trips(session, other_session):
    _populate(session)
    session.flush()
    lines = list(repo.export_jsonl(session=session, now=T0))
    assert json.loads(lines[0])["type"] == "header"
    assert {json.loads(line)["type"] for line in lines} == {"header", "workload", "device", "trial",
                                                            "schedule_version"}
    counts = repo.import_jsonl(lines, session=other_session, author="farm-b", now=at(100))
    assert (counts.workloads, counts.devices, counts.trials, counts.duplicate_trials, counts.versions) == (
        2, 1, 4, 0, 2)
    assert _heads(other_session) == _heads(session)
    assert {v.reason for v in schedules.history(MATMUL, CLASS, session=other_session).items} == {"import"}
    again = repo.import_jsonl(lines, session=other_session, author="farm-b", now=at(200))
    assert (again.trials, again.duplicate_trials, again.versions) == (0, 4, 0)
    back = list(repo.export_jsonl(session=other_session))
    assert repo.import_jsonl(back, session=session, author="farm-a").trials == 0  # same content identity


def test_import_appends_only_when_the_imported_head_beats_the_local_one(session, other_session):
    _populate(session)
    lines = list(repo.export_jsonl(session=session, workload_key=MATMUL))
    ag = agent(other_session)
    job(other_session, budget=1)
    measure(other_session, ag, [1e-3], now=at(1))  # local head is far faster than farm A's 9 ms
    counts = repo.import_jsonl(lines, session=other_session, author="farm-b", now=at(50))
    assert counts.versions == 0 and counts.trials == 2
    assert schedules.head(MATMUL, CLASS, session=other_session).trial.median_s == 1e-3
    faster = _scaled(lines, 1e-3)  # farm A's trials, now 1000x faster (and new content: not duplicates)
    schedules.pin(MATMUL, CLASS, 1, session=other_session, author="ops")
    assert repo.import_jsonl(faster, session=other_session, author="farm-b").versions == 0  # pinned
    schedules.pin(MATMUL, CLASS, None, session=other_session, author="ops")
    counts = repo.import_jsonl(faster, session=other_session, author="farm-b", now=at(60))
    assert (counts.trials, counts.duplicate_trials, counts.versions) == (0, 2, 1)
    head = schedules.head(MATMUL, CLASS, session=other_session)
    assert (head.reason, head.author, head.trial.median_s) == ("import", "farm-b", pytest.approx(9e-6))


def _scaled(lines: list[str], factor: float) -> list[str]:
    out = []
    for line in lines:
        obj = json.loads(line)
        if obj["type"] == "trial" and obj["median_s"] is not None:
            obj.update({k: obj[k] * factor for k in ("median_s", "ci_low_s", "ci_high_s")},
                       samples=[x * factor for x in obj["samples"]])
        out.append(json.dumps(obj))
    return out


@pytest.mark.parametrize("bad, problem", [
    ("not json", "line 3"),
    ('{"type": "trial"}', "missing field"),
    ('{"type": "spaceship"}', "unknown type"),
    ('{"type": "workload", "key": "matmul(M=-1)"}', "line 3"),
    ('{"type": "device", "device_class": "tpu-v9"}', "bad device class"),
    ('{"type": "device", "device_class": "cpu-x86_64-sse4_2-1c", "fingerprint": {"target": ' + json.dumps(
        dict(cc.cpu_target(isa="sse").to_dict(), vector_bytes=3)) + '}}',
     "line 3: .*device target.vector_bytes: must be 16"),  # a target no code can be generated for, as Register
    ('{"type": "workload", "key": "matmul(M=64,N=64,K=64)", "flops": NaN}', "line 3: NaN is not JSON"),
    ('{"type": "workload", "key": "matmul(M=64,N=64,K=64)", "flops": 1e999}', "line 3: 1e999 is beyond"),
    ('{"type": "schedule_version", "workload": "matmul(M=64,N=64,K=64)", "device_class": "cpu-x86_64-avx2-2c", '
     '"version": 1, "trial": "t", "reason": "import", "created_at": "9999-12-31T23:59:59-01:00"}',
     r"line 3: schedule_version: created_at '9999-12-31T23:59:59-01:00' must be between"),
    ('{"type": "schedule_version", "workload": "matmul(M=64,N=64,K=64)", "device_class": "cpu-x86_64-avx2-2c", '
     '"version": 99999999999999999999, "trial": "t", "reason": "import", "created_at": "2026-01-01T00:00:00Z"}',
     "line 3: schedule_version: version must be between 1 and 2147483647"),
])
def test_a_malformed_import_changes_nothing(session, other_session, bad, problem):
    _populate(session)
    lines = list(repo.export_jsonl(session=session))
    before = {t: _count(other_session, t) for t in Base.metadata.tables}
    with pytest.raises(repo.ImportFormatError, match=problem):
        repo.import_jsonl(lines[:2] + [bad] + lines[2:], session=other_session, author="x")
    other_session.commit()
    assert {t: _count(other_session, t) for t in Base.metadata.tables} == before


def test_a_version_pointing_at_a_missing_trial_is_rejected(session, other_session):
    _populate(session)
    lines = [line for line in repo.export_jsonl(session=session) if '"type":"trial"' not in line]
    with pytest.raises(repo.ImportFormatError, match="is not in the import"):
        repo.import_jsonl(lines, session=other_session, author="x")
    assert _count(other_session, "workloads") == 0
