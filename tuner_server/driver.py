"""The job driver: a background thread that turns open jobs into queued tasks and finishes them.

Each pass (`tick`) sweeps expired leases and silent agents (with a grace window after a start, see `_sweep`; at most
every `sweep_gap_s`, since leases and silences last tens of seconds), then, for every queued or running job: pins a
device class and a seed when the job has none, feeds new trials to its search strategy, keeps enough tasks queued to
keep the matching agents busy (never more tasks than the budget), and, once its budget is reached or its space is
exhausted, runs its final phase (its top trials re-measured head to head against the head, one COMPARE task at a
time) and then finishes it.

Transactions are short and the search runs outside them. Reads take no write lock on SQLite and no BEGIN and COMMIT
round trips on PostgreSQL (`statement_engine`); those of every pass are statements built once, run over a Connection
(`repo.pass_reads`). All state lives in the database; strategies are a cache, rebuilt from a job's trials after a
restart (`repo.enqueue_configs` skips configs already queued).
"""
from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Connection, Row
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

import compiler_core as cc
from tuner_server import metrics, repo
from tuner_server.background import PeriodicThread
from tuner_server.db import Trial, session_scope, statement_sessions, utcnow
from tuner_server.db.availability import OUTAGE, unavailable
from tuner_server.db.engine import statement_engine
from tuner_server.db.leader_lock import LeadershipLost
from tuner_server.db.models import JOB_OPEN_STATES
from tuner_server.repo import JobProgress, comparisons, pass_reads
from tuner_server.repo.jobs import counted_progress
from tuner_server.repo.sweep_rules import silent_since
from tuner_server.search import Observation, SearchStrategy, StrategyContext, TransferTrial, make_strategy
from tuner_server.search.default_first import DefaultFirst
from tuner_server.targets import NoTarget, pick_device_class, target_for_class

log = logging.getLogger(__name__)

MIN_QUEUED = 8  # tasks kept queued per job even with no agent of its class active
QUEUED_PER_AGENT = 4  # ... and this many per active agent of the class, so every lease comes back full
OBSERVE_SLACK = 32  # trials re-read behind the last one seen (one may commit after a later-stamped one)
MAX_OPEN_JOBS = 10_000
TRANSFER_STRATEGIES = ("model",)  # strategies that learn from trials of other workloads on the device class
MAX_FRUITLESS_BATCHES = 4  # proposals that queue nothing (the job is full, or all were queued already)
# Between passes, however often woken: a busy farm wakes the driver with every report, and back-to-back passes
# took a third of the tuner's CPU at 32 agents (benchmarks/farm_scale.py) while QUEUED_PER_AGENT tasks queued per
# agent last seconds.
MIN_GAP_S = 0.5
# Sweeps (expired leases, silent agents, the jobs gauge) at most this often, and at most every eighth of the lease
# and of the silence that loses an agent: each is a write transaction, a seventh of a pass's database time.
SWEEP_GAP_S = 2.0


def derive_seed(job_id: str) -> int:
    """A job's seed when it was created without one: stable, from its id (63 bits, fits BIGINT)."""
    return int.from_bytes(hashlib.sha256(job_id.encode()).digest()[:8], "big") >> 1


def observation(trial: Trial | Row) -> Observation:
    """A trial, as a Trial or a row with its id, config, median_s and status, for the strategy."""
    return Observation(dict(trial.config), trial.median_s if trial.status == "OK" else None, trial.status)


@dataclass
class _Plan:
    """The in-memory search state of one job."""

    device_class: str
    strategy: SearchStrategy
    observed: set[str] = field(default_factory=set)  # ids of the trials the strategy has seen
    exhausted: bool = False


@dataclass(frozen=True)
class _JobView:
    """What one pass needs of a job. `trials`: the whole history (Trials) when the job has no cached strategy, else
    the ones it has not seen (rows of pass_reads.job_trials_after)."""

    job_id: str
    workload_key: str
    device_class: str
    seed: int
    strategy: str
    options: dict
    progress: JobProgress
    trials: Sequence[Trial | Row]
    transfer: list[TransferTrial] = field(default_factory=list)
    stale_head: dict | None = None  # the head's config when another code generator measured it: re-validate it


@dataclass
class TickSummary:
    enqueued: int = 0
    finished: dict[str, str] = field(default_factory=dict)  # job id -> end state
    requeued: int = 0
    lost_tasks: int = 0
    lost_agents: int = 0
    jobs: int = 0  # open jobs looked at
    seconds: float = 0.0


_UNPINNED = "unpinned"  # what `_read` says of a job whose seed or device class `_pin` must set first


class _JobFailed(Exception):
    """The job cannot run at all (bad strategy options, no space for its device, a search that raises): it ends as
    failed."""


@contextmanager
def _search_failures(view: _JobView) -> Iterator[None]:
    """A failure of the job's search (building its space, defaults and strategy; observing; proposing) fails the job
    at once, with what failed, rather than on every pass forever; the database's failures pass through (the pass
    ends and the next one retries)."""
    try:
        yield
    except Exception as exc:
        if isinstance(exc, _JobFailed | SQLAlchemyError | LeadershipLost) or unavailable(exc) is not None:
            raise
        if isinstance(exc, ValueError | NoTarget):  # a bad workload, space or strategy option; a class without target
            detail = str(exc)
        else:  # a fault of the code: its traceback, once (the job ends here)
            log.error("job driver: the search of job %s raised", view.job_id, exc_info=True)
            detail = f"the search failed ({type(exc).__name__}: {exc}); the tuner's log has the traceback"
        raise _JobFailed(f"cannot search {view.workload_key} on {view.device_class} with strategy "
                         f"{view.strategy!r}: {detail}") from exc


class JobDriver:
    def __init__(self, session_factory: sessionmaker[Session], settings, *, interval_s: float = 2.0,
                 min_gap_s: float = MIN_GAP_S, min_queued: int = MIN_QUEUED, queued_per_agent: int = QUEUED_PER_AGENT,
                 class_models=None, feature_pool=None):
        self._sessions, self._settings = session_factory, settings
        self._reads, self._read_engine = statement_sessions(session_factory), statement_engine(session_factory)
        self.sweep_gap_s = min(SWEEP_GAP_S, settings.lease_seconds / 8, settings.agent_lost_after_s / 8)
        self._last_sweep: datetime | None = None
        self.class_models, self.feature_pool = class_models, feature_pool
        self.interval_s, self.min_gap_s = interval_s, min_gap_s
        self.min_queued, self.queued_per_agent = min_queued, queued_per_agent
        self._plans: dict[str, _Plan] = {}
        self._tick_lock = threading.Lock()
        self._loop = PeriodicThread(lambda: self._guarded("tick", self.tick), "tunefarm-job-driver", interval_s,
                                    min_gap_s)
        self._first_tick: datetime | None = None

    def start(self) -> None:
        self._loop.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._loop.stop(timeout_s)

    def wake(self) -> None:
        """Run a pass soon (a job was created or cancelled, tasks were leased, results arrived)."""
        self._loop.wake()

    def tick(self, now: datetime | None = None) -> TickSummary:
        """One pass over the farm; each phase and each job in its own transaction, failures logged."""
        start = time.perf_counter()
        now = now or utcnow()
        summary = TickSummary()
        with self._tick_lock:
            if self._sweep_due(now):
                self._guarded("sweep", self._sweep, now, summary)
            open_jobs, active = self._guarded("scan", self._scan, now) or ([], {})
            for job_id in open_jobs:
                self._guarded("job", self._drive_job, job_id, active, now, summary)
            for job_id in set(self._plans) - set(open_jobs):
                del self._plans[job_id]
        summary.jobs = len(open_jobs)
        summary.seconds = time.perf_counter() - start
        metrics.DRIVER_TICK.observe(summary.seconds)
        return summary

    def _guarded(self, phase: str, fn, *args):
        """Run one phase; its failure is logged and the pass goes on, except when the database is unavailable: then
        the pass ends (the loop backs off, db/availability.py logs the outage once) and, after an outage, the
        restart grace starts again (agents could not reach the farm either)."""
        try:
            return fn(*args)
        except LeadershipLost:
            raise  # another replica leads now: this pass ends here (background.py logs it once)
        except Exception as exc:
            metrics.DRIVER_ERRORS.labels(phase=phase).inc()
            kind = unavailable(exc)
            if kind is None:
                log.exception("job driver: %s failed", phase)
                return None
            if kind == OUTAGE:
                self._first_tick = self._last_sweep = None
            raise

    def _sweep_due(self, now: datetime) -> bool:
        last = self._last_sweep
        return last is None or now < last or (now - last).total_seconds() >= self.sweep_gap_s

    def _sweep(self, now: datetime, summary: TickSummary) -> None:
        attempts, lost_after = self._settings.max_task_attempts, self._settings.agent_lost_after_s
        self._first_tick = self._first_tick or now
        # A restarted tuner (or one whose database was down) heard nobody meanwhile: for a full silence window after
        # it starts, agents do not count as lost and the leases of agents not heard from since do not expire, so
        # an agent that comes back extends its leases (its heartbeat) and the results it measured still count.
        grace = (now - self._first_tick).total_seconds() < lost_after
        expired, lost_agents = repo.Requeued([], []), []
        with self._read_engine.connect() as c:
            due = pass_reads.sweep_has_work(c, now, None if grace else silent_since(now, lost_after))
            counts = pass_reads.job_state_counts(c)
        if due:
            with session_scope(self._sessions) as s:
                expired = repo.requeue_expired(session=s, now=now, max_attempts=attempts,
                                               heard_since=self._first_tick if grace else None)
                lost_agents = [] if grace else repo.mark_lost_agents(session=s, lost_after_s=lost_after, now=now,
                                                                     max_attempts=attempts)
        self._last_sweep = now
        metrics.set_job_counts(counts)
        summary.requeued, summary.lost_tasks, summary.lost_agents = map(len, (expired.requeued, expired.lost,
                                                                              lost_agents))
        metrics.LEASES_EXPIRED.labels(outcome="requeued").inc(len(expired.requeued))
        metrics.LEASES_EXPIRED.labels(outcome="lost").inc(len(expired.lost))
        metrics.AGENTS_LOST.inc(len(lost_agents))
        if lost_agents:
            log.warning("agents lost (silent for %.0f s): %s", self._settings.agent_lost_after_s, lost_agents)

    def _scan(self, now: datetime) -> tuple[list[str], dict[str, int]]:
        """(ids of open jobs, highest priority first; agents per device class active and heard from within the
        silence window at `now`)."""
        heard_since = silent_since(now, self._settings.agent_lost_after_s)
        with self._read_engine.connect() as c:
            return pass_reads.open_job_ids(c, limit=MAX_OPEN_JOBS), pass_reads.active_agents_by_class(c, heard_since)

    def _drive_job(self, job_id: str, active: Mapping[str, int], now: datetime, summary: TickSummary) -> None:
        """Read the job (short transaction), search outside any transaction (a model-guided proposal may take a
        while, and on SQLite a transaction holds the write lock), queue the proposals (short transactions)."""
        try:
            view = self._read(job_id, active)
            if view == _UNPINNED:
                with session_scope(self._sessions) as s:
                    self._pin(job_id, active, s)
                view = self._read(job_id, active)
            ending = self._advance(view, active, now, summary) if isinstance(view, _JobView) else None
        except _JobFailed as exc:
            ending = ("failed", "cannot run", str(exc))
        if ending is not None:
            self._finish(job_id, *ending, now=now, summary=summary)

    @staticmethod
    def _pin(job_id: str, active: Mapping[str, int], s: Session) -> None:
        """Give the job its seed and device class where unset (the class: none while no agent can run it). Never
        locks tasks, so it cannot deadlock with leasing or reporting (they lock tasks, then the job)."""
        job = repo.get_job(job_id, session=s, lock=True)
        if job.seed is None:
            job.seed = derive_seed(job.id)
        if job.device_class is None:
            job.device_class = pick_device_class(job.device_selector, active)

    def _read(self, job_id: str, active: Mapping[str, int]) -> _JobView | str | None:
        """The job's progress and the trials its strategy has not seen. None when the job is closed or waits for an
        agent; _UNPINNED when its seed or device class can be set (`_pin`, in a write transaction)."""
        with self._read_engine.connect() as c:
            job = pass_reads.job_row(c, job_id)
            if job.state not in JOB_OPEN_STATES:
                return None
            if job.seed is None or job.device_class is None:
                waits = job.device_class is None and pick_device_class(job.device_selector, active) is None
                return None if waits and job.seed is not None else _UNPINNED
            progress = counted_progress(c, job.id, job.state, job.trial_budget, job.phase)
            plan = self._plans.get(job.id)
            if plan is not None and plan.device_class == job.device_class:
                return self._view(job, progress, self._unseen(plan, job.id, progress.completed, c))
        with session_scope(self._reads) as s:  # no strategy here yet: the job's whole history, what it starts from
            trials = repo.list_trials(session=s, job_id=job.id, limit=job.trial_budget + 1).items
            transfer: list[TransferTrial] = []
            if job.strategy in TRANSFER_STRATEGIES and self.class_models is None:  # else: the class's model
                transfer = [TransferTrial(other, t.config, t.median_s, t.status) for other, t in
                            repo.transfer_trials(job.device_class, job.workload_key, session=s)]
            head = repo.schedules.head(job.workload_key, job.device_class, session=s)
            stale = head is not None and head.trial.codegen_version != cc.codegen_version()
            return self._view(job, progress, trials, transfer, dict(head.trial.config) if stale else None)

    @staticmethod
    def _view(job: Row, progress: JobProgress, trials: Sequence[Trial | Row], transfer: list[TransferTrial] = (),
              stale_head: dict | None = None) -> _JobView:
        return _JobView(job.id, job.workload_key, job.device_class, job.seed, job.strategy,
                        dict(job.strategy_options or {}), progress, trials, list(transfer), stale_head)

    def _advance(self, view: _JobView, active: Mapping[str, int], now: datetime,
                 summary: TickSummary) -> tuple[str, str, str | None] | None:
        """Queue what the job needs; returns (end state, reason, error) when it should finish."""
        progress = view.progress
        reason = "budget"
        if progress.completed < progress.trial_budget:
            plan = self._plan(view)
            outstanding = progress.queued + progress.leased
            room = progress.trial_budget - progress.completed - outstanding
            wanted = max(self.min_queued, self.queued_per_agent * active.get(view.device_class, 0)) - progress.queued
            created = self._queue(plan, view, min(room, wanted), now)
            summary.enqueued += max(created, 0)
            if not (plan.exhausted and outstanding == 0 and created == 0):
                return None
            if progress.completed == 0:
                return ("failed", "empty space", f"no valid config in the space of {view.workload_key} on "
                                                 f"{view.device_class}")
            reason = "space exhausted"
        return self._final(view, reason, now, summary)

    def _final(self, view: _JobView, reason: str, now: datetime,
               summary: TickSummary) -> tuple[str, str, str | None] | None:
        """The search is over: re-measure the top trials against the head, one comparison at a time (each may
        move the head); the job ends when none is left. Comparisons still running (challenges) are awaited."""
        if view.progress.comparing:
            return None
        with session_scope(self._sessions) as s:
            job = repo.get_job(view.job_id, session=s, lock=True)
            if job.state not in JOB_OPEN_STATES:
                return None
            job.phase = "final"
            queued = comparisons.final_step(job, session=s, now=now)
        summary.enqueued += int(queued)
        return None if queued else ("done", reason, None)

    def _class_model(self, view: _JobView):
        """The device class's cost model, for strategies that transfer from it (None: none yet, or not wanted)."""
        if self.class_models is None or view.strategy not in TRANSFER_STRATEGIES:
            return None
        start = self.class_models.start_model(view.device_class)
        if start is not None and start.device_class != view.device_class:
            log.info("job %s on %s starts from the cost model of %s (too little history of its own)", view.job_id,
                     view.device_class, start.device_class)
        used = start is not None and view.options.get("transfer") is not False  # the job's own choice
        with session_scope(self._sessions) as s:  # what the job's record shows it started from
            repo.record_start_model(view.job_id, start.record() if used else None, session=s)
        return start.model if start is not None else None

    def _plan(self, view: _JobView) -> _Plan:
        """The job's strategy: the cached one told about `view.trials`, or one built from them (the history)."""
        plan = self._plans.get(view.job_id)
        if plan is not None and plan.device_class == view.device_class:
            if view.trials:
                with _search_failures(view):
                    plan.strategy.observe([observation(t) for t in view.trials])
                plan.observed.update(t.id for t in view.trials)
            return plan
        if self.class_models is not None and view.trials and view.strategy in TRANSFER_STRATEGIES:
            self.class_models.warm_cache(view.device_class, view.workload_key, [t.config for t in view.trials])
        with _search_failures(view):
            with session_scope(self._reads) as s:
                target = target_for_class(view.device_class, session=s)
            space = cc.get_space(cc.parse_key(view.workload_key), target)
            context = StrategyContext(space, seed=view.seed, options=view.options,
                                      history=[observation(t) for t in view.trials], workload_key=view.workload_key,
                                      target=target, transfer=view.transfer, feature_pool=self.feature_pool,
                                      cost_model=self._class_model(view))
            firsts = [cc.default_config(cc.parse_key(view.workload_key), target)]
            strategy = DefaultFirst(make_strategy(view.strategy, context),
                                    [view.stale_head, *firsts] if view.stale_head else firsts, context.history)
        plan = _Plan(view.device_class, strategy, observed={t.id for t in view.trials})
        self._plans[view.job_id] = plan
        return plan

    @staticmethod
    def _unseen(plan: _Plan, job_id: str, completed: int, c: Connection) -> Sequence[Row]:
        """Trials the strategy has not seen: re-read from OBSERVE_SLACK behind the last one seen, then, if some are
        still missing (committed out of order), the whole history."""
        new: Sequence[Row] = []
        for offset in (max(0, len(plan.observed) - OBSERVE_SLACK), 0):
            if len(plan.observed) + len(new) >= completed:
                break
            new = pass_reads.job_trials_after(c, job_id, offset, plan.observed)
        return new

    def _queue(self, plan: _Plan, view: _JobView, wanted: int, now: datetime) -> int:
        """Propose (outside any transaction) and queue up to `wanted` new configs; proposals the job already has
        are skipped and replaced. -1 when the job closed meanwhile. A failed insert drops the cached strategy (it
        saw configs that were never queued): the next pass rebuilds it from the database."""
        created, fruitless = 0, 0
        while created < wanted and not plan.exhausted and fruitless < MAX_FRUITLESS_BATCHES:
            with _search_failures(view):
                batch = plan.strategy.propose(wanted - created)
            if not batch:
                plan.exhausted = True
                break
            try:
                with session_scope(self._sessions) as s:
                    queued = len(repo.enqueue_configs(view.job_id, batch, session=s, now=now))
            except Exception as exc:
                self._plans.pop(view.job_id, None)
                if isinstance(exc, repo.Conflict):
                    return -1
                raise
            created += queued
            fruitless = fruitless + 1 if queued == 0 else 0  # a full job queues nothing: stop, do not walk the space
            metrics.TASKS_ENQUEUED.inc(queued)
        return created

    def _finish(self, job_id: str, state: str, reason: str, error: str | None, *, now: datetime,
                summary: TickSummary) -> None:
        try:
            with session_scope(self._sessions) as s:
                repo.finish_job(job_id, session=s, state=state, error=error, now=now)
        except repo.Conflict:
            return  # it closed meanwhile (the last result finished it, or a user cancelled it)
        self._plans.pop(job_id, None)
        summary.finished[job_id] = state
        metrics.JOBS_FINISHED.labels(state=state, reason=reason).inc()
        log.info("job %s %s (%s)%s", job_id, state, reason, f": {error}" if error else "")
