"""Device targets are data: what an agent registers is stored with its class and is what the server builds spaces
from (no parsing of class names); classes without one are refused by name; 0004 backfills classes recorded before."""
from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

import compiler_core as cc
from tests.db.conftest import BACKENDS, new_database_url
from tests.db.factories import CPU_TARGET, H100, agent, cpu_fingerprint, cuda_fingerprint, device
from tests.file_modules import module_from_file
from tuner_server import repo
from tuner_server.db import make_engine, make_session_factory, session_scope, upgrade_to_head
from tuner_server.db.migrate import migrate
from tuner_server.targets import NoTarget, target_for_class

MIGRATION = Path(__file__).resolve().parents[2] / "tuner_server/db/migrations/versions/0004_device_targets.py"


def _migration_0004():
    return module_from_file("migration_0004", MIGRATION)


def test_the_registered_target_is_the_class_target_with_its_arch_specific_suffix(session):
    gpu = agent(session, "g", cuda_fingerprint())
    assert gpu.device_class == "cuda-nvidia-h100-80gb-hbm3-sm90"
    stored = target_for_class(gpu.device_class, session=session)
    assert stored == H100 and stored.arch == "sm_90a" and stored.has_tensor_cores("wgmma")
    assert stored.max_dynamic_shared_bytes == 227 * 1024 and stored.sm_count == 132
    cpu = agent(session, "c", cpu_fingerprint())
    assert target_for_class(cpu.device_class, session=session) == CPU_TARGET


def test_classes_without_a_target_are_refused_by_name(session):
    with pytest.raises(NoTarget, match="'cpu-x86_64-avx2-9c' is unknown"):
        target_for_class("cpu-x86_64-avx2-9c", session=session)
    bare = {k: v for k, v in cpu_fingerprint(cores=3).items() if k != "target"}
    dclass = device(session, bare)  # an imported class, say
    with pytest.raises(NoTarget, match="no agent of it has registered"):
        target_for_class(dclass, session=session)
    agent(session, "late", cpu_fingerprint(cores=3))  # the first agent to register fills it in
    assert target_for_class(dclass, session=session) == cc.cpu_target(isa="avx2", cores=3)


def test_a_stored_target_is_never_rewritten_by_later_agents(session):
    first = agent(session, "a", cuda_fingerprint())
    other = cc.cuda_target("sm_90a", sm_count=114).to_dict()  # an H100 PCIe would be another class; a lie here
    agent(session, "b", {**cuda_fingerprint(), "target": other})
    assert target_for_class(first.device_class, session=session).sm_count == 132


@pytest.mark.parametrize("device_class,target", [
    ("cpu-x86_64-sse4_2-2c", cc.cpu_target(isa="sse", cores=2)),
    ("cpu-x86_64-avx2-2c", cc.cpu_target(isa="avx2", cores=2)),
    ("cpu-x86_64-avx512f-8c", cc.cpu_target(isa="avx512", cores=8)),
    ("cpu-x86_64-base-4c", cc.cpu_target(isa="sse", cores=4)),
    ("cuda-nvidia-a100-sxm4-40gb-sm80", cc.cuda_target("sm_80")),
    ("cuda-nvidia-h100-80gb-hbm3-sm90", cc.cuda_target("sm_90")),
    ("cuda-tesla-v100-sm70", cc.cuda_target("sm_70")),
])
def test_0004_gives_classes_recorded_before_targets_the_target_their_name_implied(device_class, target):
    assert cc.Target.from_dict(_migration_0004().legacy_target(device_class)) == target


@pytest.fixture(params=BACKENDS)
def empty_url(request, tmp_path_factory):
    return new_database_url(request.param, request, tmp_path_factory)


def test_0004_backfills_and_downgrades_device_rows(empty_url):
    upgrade_to_head(empty_url)
    engine = make_engine(empty_url)
    try:
        with session_scope(make_session_factory(engine)) as s:
            dclass = agent(s, "old", cpu_fingerprint(cores=4)).device_class
        migrate(empty_url, "0003", down=True)
        with session_scope(make_session_factory(engine)) as s:
            assert "target" not in repo.list_devices(session=s)[0].fingerprint
            s.execute(text("INSERT INTO devices (device_class, kind, fingerprint, first_seen) VALUES "
                           "('tpu-v5-x', 'tpu', '{}', '2026-01-01 00:00:00')"))  # no target can be implied
        upgrade_to_head(empty_url)
        with session_scope(make_session_factory(engine)) as s:
            assert target_for_class(dclass, session=s) == cc.cpu_target(isa="avx2", cores=4)
            with pytest.raises(NoTarget):
                target_for_class("tpu-v5-x", session=s)
    finally:
        engine.dispose()
