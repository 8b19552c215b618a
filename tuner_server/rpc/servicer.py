"""AgentService: a thin adapter from gRPC calls to repository functions.

Each method converts and validates the request (`convert`), authenticates the agent, calls repository functions in
one transaction, and converts the answer back. Every failure leaves as a deliberate status code with a message
naming the field or the problem — INVALID_ARGUMENT, UNAUTHENTICATED, NOT_FOUND, FAILED_PRECONDITION, UNAVAILABLE
(the database is down or busy: agents back off and retry; an outage is logged once, by db/availability.py, not
per call) or INTERNAL (logged with its traceback) — never UNKNOWN.
"""
from __future__ import annotations

import functools
import hmac
import logging
import time

import grpc
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

import compiler_core as cc
from tunefarm_proto import tunefarm_pb2_grpc as pb_grpc
from tuner_server import metrics, repo
from tuner_server.db import Agent, session_scope
from tuner_server.db.availability import BUSY, OUTAGE, reason, unavailable
from tuner_server.db.engine import bound_waits
from tuner_server.fair_share import FairShare
from tuner_server.lease_sizing import LeaseSizer
from tuner_server.rpc import convert

log = logging.getLogger(__name__)

RETRY_AFTER_S = 1.0  # an agent that got no task polls again after this
RESPONSE_SHARE = 0.8  # of the time left before the caller's deadline, what a call may spend (the rest: the answer)
MIN_WORK_S = 0.05  # below this, answer at once (no task, no result recorded) instead of starting


def _ran_out(exc: OperationalError, deadline: float) -> bool:
    """The database wait that `bound_waits` bounded by `deadline` ran out (not an outage or a failure of another
    kind, which leave as UNAVAILABLE or INTERNAL)."""
    return unavailable(exc) == BUSY and time.monotonic() >= deadline - MIN_WORK_S


class Refused(Exception):
    """A request refused with a specific status code."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code = code


def status_of(exc: Exception) -> tuple[grpc.StatusCode, str]:
    """The status code and message a failure leaves with."""
    if isinstance(exc, Refused):
        return exc.code, str(exc)
    if isinstance(exc, (convert.FieldError, repo.InvalidRequest)):
        return grpc.StatusCode.INVALID_ARGUMENT, str(exc)
    if isinstance(exc, repo.NotFound):
        return grpc.StatusCode.NOT_FOUND, str(exc)
    if isinstance(exc, repo.Conflict):
        return grpc.StatusCode.FAILED_PRECONDITION, str(exc)
    kind = unavailable(exc)
    if kind == BUSY:
        log.warning("database busy, answered UNAVAILABLE: %s", reason(exc))
    if kind is not None:
        state = "unreachable" if kind == OUTAGE else "busy"
        return grpc.StatusCode.UNAVAILABLE, f"the database is {state}; retry later"
    log.exception("internal error in an AgentService call")
    return grpc.StatusCode.INTERNAL, f"internal error ({type(exc).__name__}); the server log has the details"


def rpc_method(fn):
    """Time the call, and turn any exception into a status code (never UNKNOWN)."""
    name = fn.__name__

    @functools.wraps(fn)
    def handler(self, request, context):
        with metrics.observe_grpc(name) as outcome:
            try:
                return fn(self, request, context)
            except Exception as exc:  # every failure is mapped to a status code
                code, message = status_of(exc)
            outcome["code"] = code.name
        context.abort(code, message)

    return handler


class AgentServicer(pb_grpc.AgentServiceServicer):
    def __init__(self, settings, session_factory: sessionmaker[Session], driver=None):
        self._settings = settings
        self._sessions = session_factory
        self._driver = driver
        self._share = FairShare()  # which jobs leases draw from: this process's memory of earlier leases
        self._sizes = LeaseSizer()  # how many tasks a lease gives each agent, from the results it reports

    def _wake_driver(self) -> None:
        if self._driver is not None:
            self._driver.wake()

    def _check_enrolment(self, presented: str) -> None:
        expected = self._settings.enrolment_token
        if expected is None:
            raise Refused(grpc.StatusCode.FAILED_PRECONDITION,
                          "this server has no enrolment token configured (TUNEFARM_ENROLMENT_TOKEN): "
                          "registration is disabled")
        if not hmac.compare_digest(presented.encode(), expected.get_secret_value().encode()):
            raise Refused(grpc.StatusCode.UNAUTHENTICATED, "enrolment_token is not valid for this server")

    @staticmethod
    def _agent(creds: convert.Credentials, s: Session) -> Agent:
        if not creds.agent_id or not creds.session_token:
            raise Refused(grpc.StatusCode.UNAUTHENTICATED,
                          "agent_id and session_token are required: call Register first")
        agent = repo.authenticate_agent(creds.agent_id, creds.session_token, session=s)
        if agent is None:
            raise Refused(grpc.StatusCode.UNAUTHENTICATED,
                          f"unknown agent {creds.agent_id!r} or wrong session_token: register again")
        return agent

    @rpc_method
    def Register(self, request, context):
        call = convert.register_call(request)
        self._check_enrolment(call.enrolment_token)
        ours = cc.codegen_version()
        if call.codegen_version != ours and not self._settings.allow_codegen_mismatch:
            raise Refused(grpc.StatusCode.FAILED_PRECONDITION,
                          f"agent codegen_version {call.codegen_version} differs from the tuner's {ours}: install the "
                          "same tunefarm version on both (or start the tuner with TUNEFARM_ALLOW_CODEGEN_MISMATCH=1)")
        with session_scope(self._sessions) as s:
            reg = repo.register_agent(call.fingerprint, call.agent_name, call.codegen_version, session=s)
            response = convert.register_response(reg, self._settings.heartbeat_interval_s,
                                                 self._settings.lease_seconds)
        metrics.AGENT_REGISTRATIONS.inc()
        log.info("agent %s (%s) registered as %s on %s", call.agent_name, context.peer(), response.agent_id,
                 response.device_class)
        self._wake_driver()  # a job waiting for this kind of device can be queued now
        return response

    @rpc_method
    def Heartbeat(self, request, context):
        creds, held = convert.credentials(request), convert.held_task_ids(request)
        with session_scope(self._sessions) as s:
            try:
                agent = self._agent(creds, s)
            except Refused:
                return convert.heartbeat_response(reregister=True)
            if request.leaving:
                repo.leave(agent.id, session=s)
                return convert.heartbeat_response()
            dropped = repo.heartbeat(agent.id, held, session=s, lease_seconds=self._settings.lease_seconds)
        return convert.heartbeat_response(cancelled=dropped)

    def _deadline(self, call: str, context) -> float | None:
        """When (monotonic) this call must be answered by: within the settings' budget and RESPONSE_SHARE of what
        is left of the caller's deadline; None (and counted) when too little is left to do anything useful (the
        call waited that long for a worker thread)."""
        budget = self._settings.rpc_budget_s
        remaining = context.time_remaining()
        if remaining is not None:
            budget = min(budget, remaining * RESPONSE_SHARE)
        if budget < MIN_WORK_S:
            metrics.RPC_CUT_SHORT.labels(method=call, why="no time left").inc()
            return None
        return time.monotonic() + budget

    @rpc_method
    def LeaseTasks(self, request, context):
        """Leases at most what LeaseSizer grants the agent; answers with no task rather than late (a lease the
        agent never hears of would wait out its whole lease period)."""
        creds, requested = convert.credentials(request), convert.max_tasks(request)
        deadline = self._deadline("LeaseTasks", context)
        if deadline is None:
            return convert.lease_response([], RETRY_AFTER_S)
        try:
            with session_scope(self._sessions) as s:
                bound_waits(s, deadline - time.monotonic())
                agent = self._agent(creds, s)
                wanted = self._sizes.size(agent.id, requested)
                tasks = repo.lease_tasks(agent.id, wanted, session=s, lease_seconds=self._settings.lease_seconds,
                                         share=self._share)
                if tasks and time.monotonic() > deadline:
                    s.rollback()  # too late to reach the agent: leave the tasks queued
                    metrics.RPC_CUT_SHORT.labels(method="LeaseTasks", why="late").inc()
                    tasks = []
                response = convert.lease_response(tasks, RETRY_AFTER_S)
        except OperationalError as exc:
            if not _ran_out(exc, deadline):
                raise
            metrics.RPC_CUT_SHORT.labels(method="LeaseTasks", why="database wait").inc()
            return convert.lease_response([], RETRY_AFTER_S)
        metrics.LEASES_GRANTED.inc(len(tasks))
        if len(tasks) < wanted:
            self._wake_driver()  # the queue ran short: top it up now rather than at the next pass
        return response

    @rpc_method
    def ReportResults(self, request, context):
        """Records the results in order until the deadline (at least one); the answer names only those recorded,
        and the agent sends the others again."""
        creds, reports = convert.credentials(request), convert.trial_reports(request)
        deadline = self._deadline("ReportResults", context)
        if deadline is None:
            return convert.report_response([])
        try:
            with session_scope(self._sessions) as s:
                bound_waits(s, deadline - time.monotonic())
                agent = self._agent(creds, s)
                outcomes = []
                for report in reports:
                    if outcomes and time.monotonic() > deadline:
                        metrics.RPC_CUT_SHORT.labels(method="ReportResults", why="late").inc()
                        break
                    outcomes.append(repo.record_result(agent.id, report, session=s))
                response = convert.report_response(outcomes)
        except OperationalError as exc:
            if not _ran_out(exc, deadline):
                raise
            metrics.RPC_CUT_SHORT.labels(method="ReportResults", why="database wait").inc()
            return convert.report_response([])
        self._sizes.reported(creds.agent_id, sum(o.status in ("accepted", "duplicate") for o in outcomes))
        for outcome in outcomes:
            metrics.REPORTED_RESULTS.labels(outcome=outcome.status).inc()
            if outcome.status == "accepted":
                if outcome.trial is not None:
                    metrics.TRIALS_RECORDED.labels(status=outcome.trial.status).inc()
                metrics.SCHEDULE_PROMOTIONS.inc(outcome.promoted is not None)
            elif outcome.status == "rejected":
                log.info("rejected a result for task %s from agent %s: %s", outcome.task_id, creds.agent_id,
                         outcome.reason)
        if response.accepted_task_ids:
            self._wake_driver()
        return response
