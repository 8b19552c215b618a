"""The tuner process's garbage-collector thresholds (tuner_server/gc_policy.py)."""
from __future__ import annotations

import gc

import pytest

from tuner_server import gc_policy, main
from tuner_server.settings import Settings


@pytest.fixture(autouse=True)
def restored_thresholds():
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def test_the_first_generation_threshold_is_raised_and_the_older_ones_kept():
    gc.set_threshold(700, 7, 9)
    gc_policy.tune_for_tuner()
    assert gc.get_threshold() == (gc_policy.FIRST_GENERATION_THRESHOLD, 7, 9) == (10_000, 7, 9)


def test_a_higher_threshold_is_never_lowered():
    gc.set_threshold(50_000, 10, 10)
    gc_policy.tune_for_tuner()
    assert gc.get_threshold() == (50_000, 10, 10)


class _Started(Exception):
    pass


def test_a_tuner_process_sets_them_before_anything_else(monkeypatch, tmp_path):
    def tune():
        raise _Started

    monkeypatch.setattr(main, "tune_for_tuner", tune)
    with pytest.raises(_Started):
        main.TunerRuntime(Settings(data_dir=tmp_path / "farm")).start()
    assert not (tmp_path / "farm").exists()  # nothing of the farm was made before
