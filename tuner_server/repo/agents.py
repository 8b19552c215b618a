"""Devices and agents: registration, session tokens, heartbeats, and agents that go silent."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from tuner_server.db.models import AGENT_STATES, Agent, Device, Task
from tuner_server.db.types import utcnow
from tuner_server.device_class import device_class as derive_device_class
from tuner_server.device_class import device_kind
from tuner_server.repo.errors import InvalidRequest, NotFound
from tuner_server.repo.records import DeviceSummary, Registration
from tuner_server.repo.sweep_rules import agent_silent, silent_since
from tuner_server.repo.tasks import DEFAULT_MAX_ATTEMPTS, reclaim, reclaimable, release_tasks
from tuner_server.repo.tokens import hash_secret, new_secret, secrets_match


def register_agent(fingerprint: Mapping[str, Any], name: str, codegen_version: str, *, session: Session,
                   now: datetime | None = None) -> Registration:
    """Enrol an agent: derive its device class, record the device, and issue a session token (shown once).
    An earlier registration with the same name and device class is retired ('gone'); its leases return."""
    now = now or utcnow()
    if not name or len(name) > 128:
        raise InvalidRequest("agent name must be 1 to 128 characters")
    try:
        dclass = derive_device_class(fingerprint)
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from exc
    ensure_device(dclass, fingerprint, session=session, now=now)
    for old in session.scalars(select(Agent).where(Agent.name == name, Agent.device_class == dclass,
                                                   Agent.status != "gone")).all():
        _retire(old, "gone", session=session, now=now, max_attempts=None)
    token = new_secret()
    agent = Agent(name=name, device_class=dclass, fingerprint=dict(fingerprint), session_token_hash=hash_secret(token),
                  codegen_version=codegen_version[:64], registered_at=now, last_heartbeat=now, status="active")
    session.add(agent)
    session.flush()
    return Registration(agent, token, dclass)


def ensure_device(dclass: str, fingerprint: Mapping[str, Any], *, session: Session, now: datetime) -> Device:
    """The devices row of a class, created with the first fingerprint seen. Never rewritten, except that a row
    without a compiler target (recorded before agents sent one, or imported) takes the first one an agent sends:
    that target is what the server builds the class's spaces and features from."""
    row = session.get(Device, dclass)
    if row is not None:
        if "target" not in (row.fingerprint or {}) and fingerprint.get("target") is not None:
            row.fingerprint = {**(row.fingerprint or {}), "target": dict(fingerprint["target"])}
        return row
    try:
        with session.begin_nested():
            session.add(Device(device_class=dclass, kind=device_kind(dclass), fingerprint=dict(fingerprint),
                               first_seen=now))
    except IntegrityError:
        pass
    return session.get(Device, dclass)


def authenticate_agent(agent_id: str, session_token: str, *, session: Session) -> Agent | None:
    """The agent if the token matches its registration and it has not been replaced; None otherwise."""
    agent = session.get(Agent, agent_id) if agent_id else None
    if agent is None or agent.status == "gone" or not secrets_match(session_token or "", agent.session_token_hash):
        return None
    return agent


def heartbeat(agent_id: str, held_task_ids: Sequence[str], *, session: Session, lease_seconds: float = 60,
              now: datetime | None = None) -> list[str]:
    """Mark the agent alive and extend the leases of the tasks it names (those it holds or has a result for), taking
    back those that expired while nobody else leased them (a tuner restart or a database outage kept its heartbeats
    out); returns the named ids it must drop (done, cancelled, leased to someone else, or unknown)."""
    now = now or utcnow()
    agent = session.get(Agent, agent_id)
    if agent is None or agent.status == "gone":
        raise NotFound(f"no active agent {agent_id}")
    agent.status, agent.last_heartbeat = "active", now
    held = set(held_task_ids)
    tasks = session.scalars(select(Task).where(Task.id.in_(held), Task.agent_id == agent.id,
                                               Task.state.in_(("leased", "queued")))
                            .order_by(Task.id).with_for_update()).all() if held else []
    for task in tasks:
        if reclaimable(task, agent.id):
            reclaim(task)
        task.lease_deadline = now + timedelta(seconds=lease_seconds)
    session.flush()
    return sorted(held - {t.id for t in tasks})


def leave(agent_id: str, *, session: Session, now: datetime | None = None) -> None:
    """The agent said it stops: it is retired ('gone') at once and its leases go back to the queue, so its class is
    offline as soon as it is, not after `lost_after_s` of silence."""
    agent = session.get(Agent, agent_id)
    if agent is not None and agent.status != "gone":
        _retire(agent, "gone", session=session, now=now or utcnow(), max_attempts=None)
    session.flush()


def mark_lost_agents(*, session: Session, lost_after_s: float, now: datetime | None = None,
                     max_attempts: int = DEFAULT_MAX_ATTEMPTS) -> list[str]:
    """Agents silent for `lost_after_s` become 'lost' and their leases are re-queued; returns their ids."""
    now = now or utcnow()
    silent = session.scalars(select(Agent).where(agent_silent(silent_since(now, lost_after_s)))
                             .with_for_update(skip_locked=True)).all()
    for agent in silent:
        _retire(agent, "lost", session=session, now=now, max_attempts=max_attempts)
    return [a.id for a in silent]


def list_agents(*, session: Session, status: str | None = None) -> list[Agent]:
    if status is not None and status not in AGENT_STATES:
        raise InvalidRequest(f"unknown agent status {status!r}; one of {', '.join(AGENT_STATES)}")
    query = select(Agent).order_by(Agent.registered_at, Agent.id)
    return list(session.scalars(query.where(Agent.status == status) if status else query).all())


def leases_by_agent(agent_ids: Sequence[str], *, session: Session) -> dict[str, list[Task]]:
    """The tasks each agent holds now (state 'leased'), oldest lease first: what it is working on."""
    held: dict[str, list[Task]] = {agent_id: [] for agent_id in agent_ids}
    if not held:
        return held
    rows = session.scalars(select(Task).where(Task.state == "leased", Task.agent_id.in_(list(held)))
                           .order_by(Task.lease_deadline, Task.id)).all()
    for task in rows:
        held[task.agent_id].append(task)
    return held


def list_devices(*, session: Session) -> list[DeviceSummary]:
    active = dict(session.execute(select(Agent.device_class, func.count()).where(Agent.status == "active")
                                  .group_by(Agent.device_class)).all())
    return [DeviceSummary(d.device_class, d.kind, dict(d.fingerprint), d.first_seen, active.get(d.device_class, 0))
            for d in session.scalars(select(Device).order_by(Device.device_class)).all()]


def get_agent(agent_id: str, *, session: Session) -> Agent:
    agent = session.get(Agent, agent_id)
    if agent is None:
        raise NotFound(f"no agent {agent_id}")
    return agent


def _retire(agent: Agent, status: str, *, session: Session, now: datetime, max_attempts: int | None) -> None:
    leased = session.scalars(select(Task).where(Task.agent_id == agent.id, Task.state == "leased")
                             .order_by(Task.id).with_for_update()).all()
    release_tasks(leased, session=session, now=now, max_attempts=max_attempts, why=f"agent {status}")
    agent.status = status
