"""Reading a farm's schedule database directly (read-only, no API) to check what the REST API says.

The promotion rule (tuner_server/repo/comparisons.py documents it), checked here independently from the stored
rows: after the first version, an automatic ('improved') version exists only because a head-to-head comparison
timed its trial against the previous head interleaved, and the whole 95% CI of the paired ratio lay below 1.
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import selectinload

from tests.farm.farm_support import Farm
from tuner_server.db.models import Comparison, ScheduleHead, ScheduleVersion, Trial, Workload


@dataclass
class KeyState:
    """Everything the database holds for one (workload, device class)."""

    head_version: int | None
    pinned: bool
    versions: list[ScheduleVersion]  # oldest first, trials loaded
    ok_trials: list[Trial]  # every verified trial of the key, oldest first
    comparisons: list[Comparison]  # every head-to-head comparison of the key, oldest first

    @property
    def head(self) -> ScheduleVersion:
        return next(v for v in self.versions if v.version == self.head_version)


def key_state(farm: Farm, workload_key: str, device_class: str) -> KeyState:
    with farm.db() as s:
        workload_id = s.scalar(select(Workload.id).where(Workload.key == workload_key))
        pointer = s.get(ScheduleHead, (workload_id, device_class))
        versions = s.scalars(select(ScheduleVersion).options(selectinload(ScheduleVersion.trial))
                             .where(ScheduleVersion.workload_id == workload_id,
                                    ScheduleVersion.device_class == device_class)
                             .order_by(ScheduleVersion.version)).all()
        trials = s.scalars(select(Trial).where(Trial.workload_id == workload_id, Trial.device_class == device_class,
                                               Trial.status == "OK").order_by(Trial.created_at)).all()
        comparisons = s.scalars(select(Comparison).where(Comparison.workload_id == workload_id,
                                                         Comparison.device_class == device_class)
                                .order_by(Comparison.created_at, Comparison.id)).all()
    return KeyState(pointer.head_version if pointer else None, bool(pointer and pointer.pinned), list(versions),
                    list(trials), list(comparisons))


def describe(state: KeyState) -> str:
    lines = [f"head v{state.head_version} pinned={state.pinned}"]
    for v in state.versions:
        t = v.trial
        lines.append(f"v{v.version} <- v{v.parent_version} {v.reason} at {v.created_at}: trial {t.id[:8]} "
                     f"{t.median_s} [{t.ci_low_s}, {t.ci_high_s}] n={len(t.samples)} at {t.created_at}")
    return "\n".join(lines)


def check_head_moved_only_head_to_head(state: KeyState) -> None:
    """Every 'improved' version after the first points at a trial that won a comparison against the head before it
    (its paired-ratio CI below 1); the head is a verified trial; and no comparison against the head since it became
    the head found a faster config that was not promoted."""
    head = state.head.trial
    assert head.status == "OK" and head.median_s is not None
    assert [v.version for v in state.versions] == list(range(1, len(state.versions) + 1))
    for parent, child in zip(state.versions, state.versions[1:], strict=False):
        assert child.parent_version == parent.version
        if child.reason != "improved":
            continue
        # a trial can become the head twice (it won, lost its place, won back): the win that counts is the one
        # against this version's parent
        won = [c for c in state.comparisons if c.candidate_trial_id == child.trial_id and c.outcome == "promoted"
               and c.baseline_trial_id == parent.trial_id]
        assert won, f"v{child.version} moved without a head-to-head win over v{parent.version}:\n{describe(state)}"
        assert all(c.ratio_ci_high < 1.0 for c in won), describe(state)
    promoted = {c.candidate_trial_id for c in state.comparisons if c.outcome == "promoted"}
    assert promoted <= {v.trial_id for v in state.versions}, "a won comparison that did not move the head"
    since = state.head.created_at  # comparisons against the head since it (last) became the head: none won
    against_head = [c for c in state.comparisons if c.baseline_trial_id == head.id and c.outcome != "failed"
                    and c.created_at > since and c.candidate_trial_id != head.id]
    assert state.pinned or all(c.outcome in ("kept", "stale") for c in against_head), describe(state)
