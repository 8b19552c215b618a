"""What the driver's sweep takes back, defined once: a lease past its deadline and an agent fallen silent. The
sweep's read (`pass_reads.sweep_has_work`) and its writes (`tasks.requeue_expired`, `agents.mark_lost_agents`) build
their statements from these, so the read never misses what the writes would do; `silent_since` is the cutoff both
compute from the agents' `agent_lost_after_s`."""
from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, and_

from tuner_server.db.models import Agent, Task


def lease_expired(now) -> ColumnElement[bool]:
    """A task leased and past its lease deadline at `now` (a datetime or a bind parameter)."""
    return and_(Task.state == "leased", Task.lease_deadline < now)


def agent_silent(since) -> ColumnElement[bool]:
    """An active agent whose last heartbeat came before `since` (a datetime or a bind parameter)."""
    return and_(Agent.status == "active", Agent.last_heartbeat < since)


def silent_since(now: datetime, lost_after_s: float) -> datetime:
    """The heartbeat before which an agent counts as silent at `now`: `lost_after_s` earlier."""
    return now - timedelta(seconds=lost_after_s)
