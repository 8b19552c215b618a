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

import grpc
from sqlalchemy.orm import Session, sessionmaker

import compiler_core as cc
from tunefarm_proto import tunefarm_pb2_grpc as pb_grpc
from tuner_server import metrics, repo
from tuner_server.db import Agent, session_scope
from tuner_server.db.availability import BUSY, OUTAGE, reason, unavailable
from tuner_server.rpc import convert

log = logging.getLogger(__name__)

RETRY_AFTER_S = 1.0  # an agent that got no task polls again after this


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
            dropped = repo.heartbeat(agent.id, held, session=s, lease_seconds=self._settings.lease_seconds)
        return convert.heartbeat_response(cancelled=dropped)

    @rpc_method
    def LeaseTasks(self, request, context):
        creds, wanted = convert.credentials(request), convert.max_tasks(request)
        with session_scope(self._sessions) as s:
            agent = self._agent(creds, s)
            tasks = repo.lease_tasks(agent.id, wanted, session=s, lease_seconds=self._settings.lease_seconds)
            response = convert.lease_response(tasks, RETRY_AFTER_S)
        metrics.LEASES_GRANTED.inc(len(tasks))
        self._wake_driver()  # the queue shrank (or was empty): top it up
        return response

    @rpc_method
    def ReportResults(self, request, context):
        creds, reports = convert.credentials(request), convert.trial_reports(request)
        with session_scope(self._sessions) as s:
            agent = self._agent(creds, s)
            outcomes = [repo.record_result(agent.id, report, session=s) for report in reports]
            response = convert.report_response(outcomes)
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
