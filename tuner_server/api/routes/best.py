"""Best schedules under version control: the head (or a version, or the state as of a time), its history, diffs
between versions, rollback and pin (admin).

The workload's params are query parameters beside `op` and `device`:
`/v1/best?op=matmul&M=512&N=512&K=512&dtype=float32&device=cpu-x86_64-avx2-2c`. Every route here takes `device=cpu`
or `cuda` too, resolved to the farm's class of that kind as the client's `--device` is (inputs.resolve_device: the
only class of the kind, else the only one online; a 422 listing the known classes otherwise).
"""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from sqlalchemy.orm import Session, sessionmaker

import compiler_core as cc
from tuner_server import predict, repo, targets
from tuner_server.api import schemas as s
from tuner_server.api.deps import (
    AdminAccess,
    DeviceSelectorFilter,
    DriverDep,
    Limit,
    Offset,
    ReadAccess,
    SessionDep,
    SettingsDep,
    wake_driver,
)
from tuner_server.api.errors import ApiError, documented
from tuner_server.api.head_cache import kept_key
from tuner_server.api.inputs import parse_as_of, require_device, resolve_device, unknown_device, workload_of
from tuner_server.api.json_body import StrictJSONRoute
from tuner_server.api.op_query import BestQuery, DiffQuery, HistoryQuery
from tuner_server.api.prediction import PredictedBest, predicted_public
from tuner_server.api.views import best_public, diff_public, job_public, schedule_key_public, version_public
from tuner_server.db import session_scope
from tuner_server.db.models import ScheduleVersion
from tuner_server.repo import JobLimits, JobSpec, NotFound, schedules
from tuner_server.search import STRATEGIES, check_options

router = APIRouter(prefix="/v1/best", tags=["best schedules"], route_class=StrictJSONRoute)
READ_ERRORS = documented(401, 404, 422)
WRITE_ERRORS = documented(400, 401, 403, 404, 409, 413, 415, 422)


def _missing(session: Session, device: str, what: str) -> ApiError:
    """422 listing the known classes when the class is unknown, else 404 for `what`."""
    return unknown_device(device, session) or ApiError(404, what)


def _select(session: Session, key: str, device: str, version: int | None, as_of: str | None) -> ScheduleVersion:
    if version is not None and as_of is not None:
        raise ApiError(422, "give version= or as_of=, not both")
    when = parse_as_of(as_of)
    try:
        if version is not None:
            return schedules.version(key, device, version, session=session)
        found = (schedules.as_of(key, device, when, session=session) if when is not None
                 else schedules.head(key, device, session=session))
    except NotFound as exc:
        raise _missing(session, device, str(exc)) from exc
    if found is None:
        when_text = f" as of {as_of}" if as_of else ""
        raise _missing(session, device, f"no best schedule for {key} on {device}{when_text}")
    return found


def _source(workload: cc.Workload, chosen: ScheduleVersion, target: cc.Target | None) -> str:
    if target is None:
        raise ApiError(422, f"cannot generate the source for {chosen.device_class}: no agent of that class has "
                            "registered its compiler target here (an imported history); ask without include_source")
    try:
        return cc.generate(workload, chosen.trial.config, target)
    except (cc.WorkloadError, cc.ConfigError, cc.ResourceError) as exc:
        raise ApiError(409, f"cannot regenerate the source of version {chosen.version}: {exc}",
                       {"record_codegen_version": chosen.trial.codegen_version,
                        "server_codegen_version": cc.codegen_version()}) from exc


@router.get("", response_model=s.BestPublic | PredictedBest, responses={**READ_ERRORS, **documented(403, 409)})
def get_best(request: Request, session: SessionDep, settings: SettingsDep, driver: DriverDep, principal: ReadAccess,
             query: Annotated[BestQuery, Query()]) -> s.BestPublic | PredictedBest | Response:
    """The head schedule of (workload, device class): config, runtime median and 95% CI, GFLOP/s or GB/s, trial,
    version, reason and pin state. `version=` or `as_of=` pick an earlier one; `include_source=true` adds the
    kernel source generated for the class's target (C for cpu-*, CUDA for cuda-* with the class's arch). `target` is
    what the class's agents registered, null for a class known only from an import. The op's params are query
    parameters (each op's in GET /v1/ops).

    `predict=true`: for a key with no head, the config the class's cost model ranks best among `candidates`
    (heads of the op's other shapes, the default, samples) that generates for the class's target, marked
    `predicted: true` with the model's version and training size; `enqueue=true` (admin) also queues a tuning
    job of `enqueue_trials` for the key unless one is open, also where the class has no model yet (a 404 whose
    `detail.enqueued_job` is that job)."""
    workload, device, version = query.workload(), resolve_device(query.device, session), query.version
    if query.predict and (version is not None or query.as_of is not None):
        raise ApiError(422, "predict=true answers for the head only: give it without version= or as_of=")
    if query.enqueue and not query.predict:
        raise ApiError(422, "enqueue=true goes with predict=true")
    of_head = version is None and query.as_of is None
    heads, cache_key = request.app.state.head_cache, kept_key(workload.key, device, query.include_source)
    current = schedules.head_version(workload.key, device, session=session) if of_head else None
    if current is not None and (kept := heads.get(cache_key, current)) is not None:
        return Response(kept, media_type="application/json")  # the hot read (api/head_cache.py)
    if query.predict and current is None:
        return _predicted(session, settings, driver, principal, query, workload, device,
                          request.app.state.session_factory)
    chosen = _select(session, workload.key, device, version, query.as_of)
    try:
        target = targets.target_for_class(device, session=session)
    except LookupError:
        target = None  # a class known only from imports: the schedule is served, its target is not known here
    head = chosen if of_head else schedules.head(workload.key, device, session=session)
    out = best_public(chosen, head, target, _source(workload, chosen, target) if query.include_source else None)
    if not of_head or target is None:
        return out
    body = out.model_dump_json().encode()
    heads.put(cache_key, chosen.version, body)
    return Response(body, media_type="application/json")


def _predicted(session: Session, settings, driver, principal, query: BestQuery, workload: cc.Workload,
               device: str, writes: sessionmaker[Session]) -> PredictedBest:
    """`session` only reads (a GET's); `writes` makes the session enqueue=true queues its job in."""
    if query.enqueue and principal.scope != "admin":
        raise ApiError(403, f"enqueue=true queues a job, which needs an admin token; yours has scope "
                            f"{principal.scope!r}")
    require_device(device, session)
    try:
        target = targets.target_for_class(device, session=session)
    except LookupError as exc:
        raise ApiError(422, f"cannot predict for {device}: no agent of that class has registered its compiler "
                            "target here (an imported history)") from exc
    try:
        answer = predict.predict(workload, device, target, session=session, limit=query.candidates)
    except predict.NoModel as exc:
        # a class without a model is where tuning is wanted most: enqueue=true still queues the key's job
        job = _enqueue(writes, settings, driver, principal, workload, device, query)
        queued = f"; tuning job {job.id} ({job.state}) covers this key" if job is not None else ""
        raise ApiError(404, f"no best schedule for {workload.key} on {device}, and no prediction: {exc}{queued}",
                       {"enqueued_job": job.model_dump(mode="json")} if job is not None else None) from exc
    except predict.NothingBuilds as exc:
        raise ApiError(409, str(exc)) from exc
    job = _enqueue(writes, settings, driver, principal, workload, device, query)
    source = cc.generate(workload, answer.config, target) if query.include_source else None
    return predicted_public(workload, device, answer, target, source, job)


def _enqueue(writes: sessionmaker[Session], settings, driver, principal, workload: cc.Workload, device: str,
             query: BestQuery) -> s.JobPublic | None:
    """With `enqueue=true`, the key's open job on the class, or a new model-guided one of `enqueue_trials` (capped
    by the server's limit); None without."""
    if not query.enqueue:
        return None
    with session_scope(writes) as session:
        job = repo.open_job_for(workload.key, device, session=session)
        if job is not None:
            return job_public(job, repo.job_progress(job.id, session=session))
        spec = JobSpec(workload.key, device, min(query.enqueue_trials, settings.max_trials_per_job), "model",
                       check_options("model", {}), 0, created_by=principal.author)
        job = repo.create_job(spec, session=session, limits=JobLimits.from_settings(settings),
                              known_strategies=frozenset(STRATEGIES))
        out = job_public(job, repo.job_progress(job.id, session=session))
    wake_driver(driver)
    return out


@router.get("/keys", response_model=s.Page[s.ScheduleKeyPublic], responses=documented(401, 422))
def list_keys(session: SessionDep, _: ReadAccess, op: s.OpName | None = None, device: DeviceSelectorFilter = None,
              limit: Limit = 50, offset: Offset = 0) -> s.Page[s.ScheduleKeyPublic]:
    """Every (workload, device class) with a head, most recently changed first; `op` and `device` filter."""
    device_class = resolve_device(device, session) if device is not None else None
    page = schedules.list_keys(session=session, op=op, device_class=device_class, limit=limit, offset=offset)
    return s.Page[s.ScheduleKeyPublic](items=[schedule_key_public(k) for k in page.items], total=page.total,
                                       limit=limit, offset=offset)


@router.get("/history", response_model=s.Page[s.VersionPublic], responses=documented(401, 422))
def get_history(session: SessionDep, _: ReadAccess,
                query: Annotated[HistoryQuery, Query()]) -> s.Page[s.VersionPublic]:
    """Every version of the key, newest first (an empty page for a workload never tuned on a known class)."""
    workload, device = query.workload(), resolve_device(query.device, session)
    page = schedules.history(workload.key, device, session=session, limit=query.limit, offset=query.offset)
    if page.total == 0:
        require_device(device, session)
    return s.Page[s.VersionPublic](items=[version_public(v) for v in page.items], total=page.total,
                                   limit=query.limit, offset=query.offset)


@router.get("/diff", response_model=s.DiffPublic, responses=READ_ERRORS)
def get_diff(session: SessionDep, _: ReadAccess,
             query: Annotated[DiffQuery, Query()]) -> s.DiffPublic:
    """The knobs that differ between versions v1 and v2 of a key, and the ratio of their medians."""
    workload, device = query.workload(), resolve_device(query.device, session)
    try:
        diff = schedules.diff(workload.key, device, query.v1, query.v2, session=session)
    except NotFound as exc:
        raise _missing(session, device, str(exc)) from exc
    return diff_public(diff, workload.key, device)


@router.post("/rollback", status_code=201, response_model=s.VersionPublic, responses=WRITE_ERRORS)
def rollback(body: s.RollbackRequest, session: SessionDep, principal: AdminAccess) -> s.VersionPublic:
    """Make an earlier version's schedule the head again, as a new version with reason 'rollback'."""
    workload = workload_of(body.op, body.params)
    device = require_device(resolve_device(body.device, session), session)
    made = schedules.rollback(workload.key, device, body.to_version, session=session, author=principal.author,
                              message=body.message)
    out = version_public(made)
    session.commit()
    return out


@router.post("/pin", status_code=201, response_model=s.VersionPublic, responses=WRITE_ERRORS)
def pin(body: s.PinRequest, session: SessionDep, principal: AdminAccess) -> s.VersionPublic:
    """Pin a version (it becomes the head and automatic promotion stops), or with version null and `trial_id` a
    verified trial of the key that never became a version (to replace a head nothing can beat, e.g. an implausible
    import), or unpin with version null alone; each appends a version with reason 'pin'. Pinning the schedule the key
    is pinned to already (the pinned head's version, the version it was pinned from, or its trial) is a 409 that
    appends nothing, as an unpin of a key not pinned and a rollback to the head are: a pin is never a silent no-op,
    and the history gets no version that changes nothing."""
    workload = workload_of(body.op, body.params)
    device = require_device(resolve_device(body.device, session), session)
    if body.trial_id is not None:
        if body.version is not None:
            raise ApiError(422, "give version or trial_id, not both")
        made = schedules.pin_trial(workload.key, device, body.trial_id, session=session, author=principal.author,
                                   message=body.message)
    else:
        made = schedules.pin(workload.key, device, body.version, session=session, author=principal.author,
                             message=body.message)
    out = version_public(made)
    session.commit()
    return out
