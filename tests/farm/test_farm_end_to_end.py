"""One tuner process and TWO agent processes on loopback, driven over HTTP only; checked against the database.

The key (matmul 64x64x64 float32, the agents' device class) is first seeded, through /v1/import, with one
"other farm's" trial of the untuned default config measured by ANOTHER code generator (TEST DATA), so that what
follows does not depend on how noisy this machine's timings are: the job must re-validate the head's config under
its own code generator first (version 2, reason 'revalidated'), whatever the speeds.

- A 12-trial matmul job completes, all 12 trials verified (OK), both agents measured some of them, and its final
  phase re-measured its top trials and the default head to head: the job reports the head's paired time, its
  ratio to numpy and to the default.
- /v1/best is the database's head, and the head moved only through head-to-head wins
  (schedule_checks.check_head_moved_only_head_to_head says exactly what is compared).
- History lists the database's versions; as_of between versions 1 and 2 gives version 1; diff names the knobs
  that differ and the median ratio; rollback (to the seed) appends a version whose config is the old one.
- A pin blocks automatic moves: a job runs while the stale seed is pinned and the head does not move (no
  re-validation either); after unpinning, the next job re-validates it.
- An export imported into a SECOND tuner process on a fresh database gives the same head.
"""
from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import compiler_core as cc
from tests.farm.farm_support import FAST_MEASURE, MATMUL, Farm
from tests.farm.schedule_checks import check_head_moved_only_head_to_head, key_state

WORKLOAD = cc.make_workload("matmul", MATMUL)
SEED_MEDIAN_S = 1.0
OTHER_CODEGEN = "0123456789abcdef"  # TEST DATA: a code generator this farm does not run
SEED_TRIAL = "5eed0000-0000-4000-8000-000000000001"  # TEST DATA: its id in the other farm (a UUID, as exports write)


def seed_lines(device_class: str, target: cc.Target) -> list[str]:
    """TEST DATA: an export of another farm holding one slow, verified trial of the default config as its head."""
    created = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    config = cc.default_config(WORKLOAD, target)
    records = [
        {"type": "header", "format": "tunefarm-export", "format_version": 1},
        {"type": "trial", "id": SEED_TRIAL, "workload": WORKLOAD.key, "device_class": device_class,
         "config": config, "codegen_version": OTHER_CODEGEN, "status": "OK",
         "samples": [0.99, 1.0, 1.01], "median_s": SEED_MEDIAN_S, "ci_low_s": 0.99, "ci_high_s": 1.01,
         "max_abs_error": 0.0, "created_at": created},
        {"type": "schedule_version", "workload": WORKLOAD.key, "device_class": device_class, "version": 1,
         "trial": SEED_TRIAL, "reason": "improved", "created_at": created},
    ]
    return [json.dumps(r) for r in records]


# Each task measured for 0.25 s or more, so one agent alone needs longer than the other's idle poll (2 s) for the
# 12-trial job: with FAST_MEASURE a loaded 2-core host once saw one agent take all 12 before the other asked again.
SHARED_MEASURE = {**FAST_MEASURE, "min_time_s": 0.25, "max_time_s": 0.4, "max_repeats": 100_000}


def run_job(farm: Farm, trials: int, seed: int, measure: dict = FAST_MEASURE) -> str:
    with farm.client() as c:
        job = c.create_job("matmul", MATMUL, "cpu", trials, seed=seed, measure=measure)
    done = farm.wait_job(job.id)
    assert done.state == "done", (done.state, done.error, farm.logs())
    return job.id


def test_job_best_history_rollback_pin_and_export(farm, backend):
    f = farm(agents=0, backend=backend)
    for _ in range(2):  # two tasks held at most: the first agent to lease cannot take the whole first round
        f.add_agent(extra_args=("--lease-batch", "2"))
    f.wait_for_agents()
    dclass = f.device_class()
    c = f.client()
    (registered,) = [d for d in c.devices().items if d.device_class == dclass]
    seeded = c.import_lines(seed_lines(dclass, cc.Target.from_dict(registered.fingerprint["target"])))
    assert (seeded.trials, seeded.versions) == (1, 1)
    seed = c.best("matmul", MATMUL, dclass)
    assert (seed.version, seed.reason, seed.median_s) == (1, "import", SEED_MEDIAN_S)

    job_id = run_job(f, 12, seed=1, measure=SHARED_MEASURE)
    job = c.job(job_id)
    assert job.progress.completed == job.progress.verified == 12 and job.device_class == dclass
    trials = f.trials(job_id)
    assert len(trials) == 12 and {t.status for t in trials} == {"OK"}
    assert all(t.threads and t.cpus and t.contention is not None for t in trials)
    agents = {a.name: a.id for d in c.devices().items for a in d.agents}
    assert {t.agent_id for t in trials} == {agents["agent-0"], agents["agent-1"]}, ("both agents did work", f.logs())
    default = next(t for t in trials if t.config == seed.config)  # measured first: the head's re-validation

    state = key_state(f, WORKLOAD.key, dclass)
    assert len(state.versions) >= 2 and state.versions[1].job_id == job_id
    assert (state.versions[1].reason, state.versions[1].trial_id) == ("revalidated", default.id)
    check_head_moved_only_head_to_head(state)
    finals = [x for x in c.job_comparisons(job_id) if x.purpose == "final"]
    assert finals and all(x.outcome in ("kept", "promoted", "stale") for x in finals), finals
    assert job.phase == "final" and job.result is not None and job.result.comparisons == len(finals)
    best = c.best("matmul", MATMUL, dclass)
    assert job.result.head_trial_id == best.trial_id and job.result.reference == "numpy"
    assert job.result.speedup_vs_reference.ci_low <= job.result.speedup_vs_reference.ratio
    assert job.result.speedup_vs_default is not None  # the default was re-measured against the head (or is it)
    assert (best.version, best.trial_id) == (state.head_version, state.head.trial_id)
    assert best.config == state.head.trial.config and best.median_s == state.head.trial.median_s
    assert best.head_version == best.version and not best.head_pinned

    history = c.history("matmul", MATMUL, dclass)
    assert history.total == len(state.versions)
    assert [(v.version, v.parent_version, v.trial_id, v.reason) for v in history.items] == \
        [(v.version, v.parent_version, v.trial_id, v.reason) for v in reversed(state.versions)]

    v1, v2 = history.items[-1], history.items[-2]
    middle = v1.created_at + (v2.created_at - v1.created_at) / 2
    assert v1.created_at < middle < v2.created_at
    assert c.best("matmul", MATMUL, dclass, as_of=middle).version == 1
    assert c.best("matmul", MATMUL, dclass, as_of=v2.created_at).version == 2
    assert c.best("matmul", MATMUL, dclass, version=2).trial_id == v2.trial_id

    diff = c.diff("matmul", MATMUL, dclass, 1, best.version)
    changed = {k for k in v1.config.keys() | best.config.keys() if v1.config.get(k) != best.config.get(k)}
    assert diff.changed == {k: (v1.config.get(k), best.config.get(k)) for k in changed}
    assert abs(diff.median_ratio - best.median_s / SEED_MEDIAN_S) < 1e-12

    rolled = c.rollback("matmul", MATMUL, dclass, 1, message="farm test")
    assert (rolled.version, rolled.reason, rolled.parent_version) == (best.version + 1, "rollback", best.version)
    after = c.best("matmul", MATMUL, dclass)
    assert (after.version, after.trial_id, after.config) == (rolled.version, v1.trial_id, v1.config)

    pinned = c.pin("matmul", MATMUL, dclass, rolled.version)
    assert (pinned.version, pinned.reason, pinned.pinned, pinned.trial_id) == \
        (rolled.version + 1, "pin", True, v1.trial_id)
    while_pinned = f.trials(run_job(f, 4, seed=2))
    assert any(t.config == seed.config and t.status == "OK" for t in while_pinned), "it re-validated the config"
    now = c.best("matmul", MATMUL, dclass)
    assert (now.version, now.trial_id, now.head_pinned) == (pinned.version, v1.trial_id, True)
    assert c.history("matmul", MATMUL, dclass).total == pinned.version

    unpinned = c.pin("matmul", MATMUL, dclass, None)
    assert (unpinned.reason, unpinned.pinned, unpinned.trial_id) == ("pin", False, v1.trial_id)
    job3 = run_job(f, 4, seed=3)
    moved = c.history("matmul", MATMUL, dclass).items
    first = next(v for v in moved if v.version == unpinned.version + 1)
    assert first.reason == "revalidated" and first.job_id == job3
    assert first.trial_id in {t.id for t in f.trials(job3)} and first.config == seed.config
    assert all(v.reason == "improved" for v in moved if v.version > first.version)
    check_head_moved_only_head_to_head(key_state(f, WORKLOAD.key, dclass))

    head = c.best("matmul", MATMUL, dclass)
    lines = list(c.export())
    second = farm(agents=0, backend=backend)
    with second.client() as c2:
        imported = c2.import_lines(lines)
        assert imported.trials == sum('"type":"trial"' in line for line in lines) and imported.versions == 1
        copy = c2.best("matmul", MATMUL, dclass)
    assert (copy.version, copy.reason) == (1, "import")
    assert (copy.config, copy.median_s, copy.ci_low_s, copy.ci_high_s, copy.codegen_version) == \
        (head.config, head.median_s, head.ci_low_s, head.ci_high_s, head.codegen_version)
    c.close()
