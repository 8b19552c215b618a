"""Reading a farm's schedule database directly (read-only, no API) to check what the REST API says.

`beats` is the promotion rule (tuner_server/repo/schedules.py documents it), written here independently: a verified
(OK) trial beats the head when each median lies outside the other's 95% CI on the faster side — candidate median <
head ci_low and candidate ci_high < head median (a missing CI bound counts as the median).
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import selectinload

from tests.farm.farm_support import Farm
from tuner_server.db.models import ScheduleHead, ScheduleVersion, Trial, Workload


def beats(candidate: Trial, incumbent: Trial) -> bool:
    if candidate.status != "OK" or candidate.median_s is None:
        return False
    high = candidate.ci_high_s if candidate.ci_high_s is not None else candidate.median_s
    low = incumbent.ci_low_s if incumbent.ci_low_s is not None else incumbent.median_s
    return candidate.median_s < low and high < incumbent.median_s


@dataclass
class KeyState:
    """Everything the database holds for one (workload, device class)."""

    head_version: int | None
    pinned: bool
    versions: list[ScheduleVersion]  # oldest first, trials loaded
    ok_trials: list[Trial]  # every verified trial of the key, oldest first

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
    return KeyState(pointer.head_version if pointer else None, bool(pointer and pointer.pinned), list(versions),
                    list(trials))


def describe(state: KeyState) -> str:
    lines = [f"head v{state.head_version} pinned={state.pinned}"]
    for v in state.versions:
        t = v.trial
        lines.append(f"v{v.version} <- v{v.parent_version} {v.reason} at {v.created_at}: trial {t.id[:8]} "
                     f"{t.median_s} [{t.ci_low_s}, {t.ci_high_s}] n={len(t.samples)} at {t.created_at}")
    return "\n".join(lines)


def check_head_is_fastest_verified(state: KeyState) -> None:
    """With only automatic promotions in the history (the first version may be an import): the head is a verified
    trial, every later version beat its parent under the rule, and no verified trial in the database beats the
    head. (Each new head's median and CI lie below the old head's median and ci_low, so a trial that beats today's
    head would also have beaten every earlier head: one that was never promoted cannot beat it.) In particular the
    trial with the minimum median is the head's trial or is not significantly faster than it."""
    head = state.head.trial
    assert head.status == "OK" and head.median_s is not None
    assert [v.version for v in state.versions] == list(range(1, len(state.versions) + 1))
    assert state.versions[0].reason in ("improved", "import") and state.versions[0].parent_version is None
    for parent, child in zip(state.versions, state.versions[1:], strict=False):
        assert child.reason == "improved" and child.parent_version == parent.version
        assert beats(child.trial, parent.trial), describe(state)
    faster = [t for t in state.ok_trials if beats(t, head)]
    assert not faster, f"verified trials beat the head v{state.head_version} but were not promoted: {faster}"
    fastest = min(state.ok_trials, key=lambda t: t.median_s)
    assert fastest.id == head.id or not beats(fastest, head)
