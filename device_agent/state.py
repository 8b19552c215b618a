"""The agent's logic as a pure state machine: `AgentState.handle(event) -> [instruction, ...]`.

No network, processes or clocks here: time comes in as Tick(now) events (unix seconds), and jitter from a
seeded random generator, so a test can replay any story. What it keeps:

- registration: the session, or none (register; re-register when the server forgets us);
- connection: after a failed call, exponential backoff with jitter (capped) before the next try, which is a
  heartbeat (keeps the session and its leases) or, without a session, a Register;
- leases: tasks queued or running with local deadlines (now + lease_s, extended by each acknowledged
  heartbeat); a queued task whose lease ran out is dropped, since the server has re-queued it;
- results not yet acknowledged: kept until the server accepts, ignores as duplicate, or rejects them,
  and re-sent after any failure or reconnect; nothing measured is lost; heartbeats name their tasks too, so the
  server holds their leases (after a restart: takes them back) until the report gets through;
- shutdown: stop leasing, drop queued tasks (their leases lapse), let the running task finish within the
  grace period (else cancel it), report, then Exit.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from device_agent import events as ev
from device_agent.records import Registration, Task, TrialResult


@dataclass(frozen=True)
class StateConfig:
    lease_batch: int = 4  # tasks held at once (queued + running): enough to compile ahead while one runs
    shutdown_grace_s: float = 20.0
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 30.0
    idle_poll_s: float = 2.0  # lease again after an empty answer that named no retry_after
    report_retry_s: float = 5.0  # re-send results the server answered without mentioning
    max_sleep_s: float = 5.0
    seed: int = 0
    # when no queued task is ready (TaskReady: build and inputs done), start none for up to this long, so that
    # a task that becomes ready first runs first; 0: start the oldest at once (a shell without readiness events)
    ready_wait_s: float = 0.0


class AgentState:
    def __init__(self, config: StateConfig | None = None) -> None:
        self.config = config = config or StateConfig()
        self.rng = random.Random(config.seed)
        self.now = 0.0
        self.started = False
        self.session: Registration | None = None
        self.connected = True
        self.failures = 0  # consecutive failed calls: the backoff exponent
        self.retry_at = 0.0
        self.inflight: set[str] = set()
        self.queued: dict[str, Task] = {}  # in lease order
        self.ready: set[str] = set()  # queued tasks whose build and inputs are done
        self.queued_at: dict[str, float] = {}
        self.running: Task | None = None
        self.deadlines: dict[str, float] = {}
        self.cancelled: set[str] = set()
        self.unacked: dict[tuple[str, int], TrialResult] = {}
        self.resend_at: dict[tuple[str, int], float] = {}
        self.sending: tuple[tuple[str, int], ...] = ()
        self.next_heartbeat = 0.0
        self.next_lease = 0.0
        self.draining = False
        self.grace_deadline = 0.0
        self.fatal: str | None = None
        self.exited = False

    # ---- entry point -------------------------------------------------------------------------------
    def handle(self, event) -> list:
        if self.exited:
            return []
        out = getattr(self, "_on_" + type(event).__name__)(event) or []
        return out + self._drive()

    @property
    def held(self) -> tuple[str, ...]:
        ids = list(self.queued)
        if self.running is not None and self.running.task_id not in self.cancelled:
            ids.insert(0, self.running.task_id)
        return tuple(ids)

    @property
    def claimed(self) -> tuple[str, ...]:
        """What a heartbeat names: the held tasks, then those whose results await acknowledgement. The server keeps
        (or, after a restart or an outage, takes back) their leases until the report arrives, so nobody else is
        given a task whose result is on its way."""
        ids = list(self.held)
        ids += [task_id for task_id in dict.fromkeys(k[0] for k in self.unacked) if task_id not in ids]
        return tuple(ids)

    # ---- events ------------------------------------------------------------------------------------
    def _on_Tick(self, e: ev.Tick):
        self.now = max(self.now, e.now)

    def _on_Started(self, e: ev.Started):
        self.started = True

    def _on_Registered(self, e: ev.Registered):
        self.inflight.discard("register")
        self.session = Registration(e.agent_id, e.session_token, e.device_class, e.heartbeat_s, e.lease_s)
        self._reachable()
        self.next_heartbeat = self.now + e.heartbeat_s
        self.next_lease = self.now

    def _on_RegisterFailed(self, e: ev.RegisterFailed):
        self.inflight.discard("register")
        if e.fatal:
            self.fatal = e.error
        else:
            self._unreachable()

    def _on_Leased(self, e: ev.Leased):
        self.inflight.discard("lease")
        self._reachable()
        if self.draining or self.session is None:  # not ours to run any more: the leases lapse, the server re-queues
            return [ev.CancelTask(t.task_id) for t in e.tasks if t.task_id not in self.held]
        new = [t for t in e.tasks if t.task_id not in self.queued and not self._is_running(t.task_id)]
        for task in new:
            self.queued[task.task_id] = task
            self.deadlines[task.task_id] = self.now + self.session.lease_s
            self.queued_at[task.task_id] = self.now
        self.next_lease = self.now if new else self.now + self.config.idle_poll_s

    def _on_TaskReady(self, e: ev.TaskReady):
        if e.task_id in self.queued:
            self.ready.add(e.task_id)

    def _on_NothingToLease(self, e: ev.NothingToLease):
        self.inflight.discard("lease")
        self._reachable()
        self.next_lease = self.now + (e.retry_after_s if e.retry_after_s > 0 else self.config.idle_poll_s)

    def _on_TaskDone(self, e: ev.TaskDone):
        r = e.result
        if self._is_running(r.task_id):
            self.running = None
        self.deadlines.pop(r.task_id, None)
        if r.task_id in self.cancelled:
            self.cancelled.discard(r.task_id)
            return
        self.unacked[r.key] = r
        self.resend_at[r.key] = 0.0

    def _on_Reported(self, e: ev.Reported):
        self.inflight.discard("report")
        self._reachable()
        settled = set(e.accepted) | set(e.duplicate) | set(e.rejected)
        for key in self.sending:
            if key[0] in settled:
                self.unacked.pop(key, None)
                self.resend_at.pop(key, None)
            elif key in self.unacked:
                self.resend_at[key] = self.now + self.config.report_retry_s
        self.sending = ()

    def _on_ReportFailed(self, e: ev.ReportFailed):
        return self._on_ConnectionLost(ev.ConnectionLost("report", e.error))

    def _on_HeartbeatAck(self, e: ev.HeartbeatAck):
        self.inflight.discard("heartbeat")
        self._reachable()
        if e.reregister:
            return self._drop_session()
        out = [self._cancel(task_id) for task_id in e.cancelled]
        if self.session is not None:
            for task_id in self.held:
                self.deadlines[task_id] = max(self.deadlines.get(task_id, 0.0), self.now + self.session.lease_s)
        return [i for i in out if i is not None]

    def _on_SessionExpired(self, e: ev.SessionExpired):
        self._call_ended(e.call)
        return self._drop_session()

    def _on_ConnectionLost(self, e: ev.ConnectionLost):
        self._call_ended(e.call)
        self._unreachable()

    def _on_ShutdownRequested(self, e: ev.ShutdownRequested):
        if self.draining:
            self.grace_deadline = self.now  # asked twice: stop now
            return []
        self.draining = True
        self.grace_deadline = self.now + self.config.shutdown_grace_s
        return self._drop_queued()

    # ---- helpers -----------------------------------------------------------------------------------
    def _is_running(self, task_id: str) -> bool:
        return self.running is not None and self.running.task_id == task_id

    def _call_ended(self, call: str) -> None:
        self.inflight.discard(call)
        if call == "report":
            for key in self.sending:
                if key in self.unacked:
                    self.resend_at[key] = 0.0  # goes out again as soon as the server answers
            self.sending = ()

    def _reachable(self) -> None:
        self.connected = True
        self.failures = 0

    def _unreachable(self) -> None:
        if not self.connected and self.now < self.retry_at:
            return  # several calls of one batch failed: one backoff step, not one per call
        self.connected = False
        delay = min(self.config.backoff_cap_s, self.config.backoff_base_s * 2 ** self.failures)
        self.retry_at = self.now + delay * (0.5 + 0.5 * self.rng.random())
        self.failures += 1

    def _cancel(self, task_id: str) -> ev.CancelTask | None:
        for key in [k for k in self.unacked if k[0] == task_id]:
            self.unacked.pop(key)
            self.resend_at.pop(key, None)
        if task_id in self.queued:
            self.queued.pop(task_id)
            self.deadlines.pop(task_id, None)
            self.ready.discard(task_id)
            self.queued_at.pop(task_id, None)
            return ev.CancelTask(task_id)
        if self._is_running(task_id) and task_id not in self.cancelled:
            self.cancelled.add(task_id)
            return ev.CancelTask(task_id)
        return None

    def _drop_queued(self) -> list:
        out = [ev.CancelTask(task_id) for task_id in self.queued]
        for task_id in self.queued:
            self.deadlines.pop(task_id, None)
        self.queued.clear()
        self.ready.clear()
        self.queued_at.clear()
        return out

    def _drop_session(self) -> list:
        """The server forgot us: register again. Queued tasks were leased to the old session and are dropped;
        the running one finishes and its result is still reported (the server decides whether it counts)."""
        self.session = None
        self.inflight.discard("lease")
        return self._drop_queued()

    # ---- what to do now ----------------------------------------------------------------------------
    def _drive(self) -> list:
        if not self.started:
            return []
        if self.fatal is not None:
            self.exited = True
            out = [ev.CancelTask(self.running.task_id)] if self.running else []
            return out + [ev.Exit(2, f"registration refused: {self.fatal}")]
        out = self._expire_leases()
        if self.draining:
            out += self._drain()
            if self.exited:
                return out
        out += self._network()
        task_id = self._next_task() if self.running is None and not self.draining else None
        if task_id is not None:
            self.running = self.queued.pop(task_id)
            self.ready.discard(task_id)
            self.queued_at.pop(task_id, None)
            out.append(ev.StartTask(self.running))
        return out + [ev.Sleep(self._sleep_s())]

    def _next_task(self) -> str | None:
        """The oldest ready task, so the device never waits on a build or a large reference while another task
        could run; when none is ready, the oldest once it has waited ready_wait_s (a lost readiness event costs
        that long, never the task)."""
        if not self.queued:
            return None
        ready = next((t for t in self.queued if t in self.ready), None)
        if ready is not None:
            return ready
        oldest = next(iter(self.queued))
        return oldest if self.now >= self._ready_deadline(oldest) else None

    def _ready_deadline(self, task_id: str) -> float:
        return self.queued_at.get(task_id, self.now) + self.config.ready_wait_s

    def _expire_leases(self) -> list:
        expired = [t for t in self.queued if self.deadlines.get(t, float("inf")) < self.now]
        for task_id in expired:
            self.queued.pop(task_id)
            self.deadlines.pop(task_id, None)
            self.ready.discard(task_id)
            self.queued_at.pop(task_id, None)
        return [ev.CancelTask(t) for t in expired]

    def _drain(self) -> list:
        out = []
        if self.running is not None and self.now >= self.grace_deadline:
            out.append(ev.CancelTask(self.running.task_id))
            self.running = None
        if self.running is None and (not self.unacked or self.now >= self.grace_deadline):
            self.exited = True
            lost = len(self.unacked)
            reason = "shut down" if not lost else f"shut down with {lost} result(s) not acknowledged"
            out.append(ev.Exit(1 if lost else 0, reason))
        return out

    def _network(self) -> list:
        if not self.connected and self.now < self.retry_at:
            return []
        if self.session is None:
            if "register" in self.inflight:
                return []
            self.inflight.add("register")
            return [ev.Register()]
        out = []
        if (not self.connected or self.now >= self.next_heartbeat) and "heartbeat" not in self.inflight:
            self.inflight.add("heartbeat")  # after a backoff this is the probe that finds the server again
            self.next_heartbeat = self.now + self.session.heartbeat_s
            out.append(ev.Heartbeat(self.claimed))
        if not self.connected:
            return out
        due = [r for k, r in self.unacked.items() if self.resend_at.get(k, 0.0) <= self.now]
        if due and "report" not in self.inflight:
            self.inflight.add("report")
            self.sending = tuple(r.key for r in due)
            out.append(ev.Report(tuple(due)))
        room = self.config.lease_batch - len(self.held)
        if not self.draining and room > 0 and self.now >= self.next_lease and "lease" not in self.inflight:
            self.inflight.add("lease")
            out.append(ev.Lease(room))
        return out

    def _sleep_s(self) -> float:
        wake = [self.now + self.config.max_sleep_s]
        if not self.connected:
            wake.append(self.retry_at)
        elif self.session is not None:
            wake.append(self.next_heartbeat)
            if not self.draining and len(self.held) < self.config.lease_batch:
                wake.append(self.next_lease)
        if self.draining:
            wake.append(self.grace_deadline)
        wake += [self.deadlines[t] for t in self.queued if t in self.deadlines]
        if self.running is None and self.queued and not self.draining:
            wake.append(self._ready_deadline(next(iter(self.queued))))
        wake += [t for t in self.resend_at.values() if t > self.now]
        return max(0.0, min(wake) - self.now)
