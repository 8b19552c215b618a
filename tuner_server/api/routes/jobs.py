"""Jobs: submit (admin), list, inspect with progress, list trials, cancel (admin)."""
from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from tuner_server import repo
from tuner_server.api import schemas as s
from tuner_server.api.deps import (
    AdminAccess,
    DeviceClassFilter,
    DriverDep,
    Limit,
    Offset,
    PathId,
    ReadAccess,
    SessionDep,
    SettingsDep,
    WorkloadKey,
    wake_driver,
)
from tuner_server.api.errors import ApiError, documented
from tuner_server.api.inputs import require_device, workload_of
from tuner_server.api.json_body import StrictJSONRoute
from tuner_server.api.views import comparison_public, curve_public, job_public, trial_public
from tuner_server.db.models import JOB_STATES, TRIAL_STATUSES
from tuner_server.repo import JobLimits, JobSpec, comparisons
from tuner_server.search import STRATEGIES, check_options, describe_strategies

router = APIRouter(prefix="/v1/jobs", tags=["jobs"], route_class=StrictJSONRoute)
MAX_CURVE_POINTS = 10_000  # a point is ~300 bytes: a 3 MB answer at most
READ_ERRORS = documented(401, 404, 422)
WRITE_ERRORS = documented(400, 401, 403, 404, 409, 413, 415, 422)


def _strategy_options(name: str, options: dict) -> dict:
    """The options parsed against the strategy's table (defaults filled in), so the job is fully explicit."""
    try:
        return check_options(name, options)
    except ValueError as exc:
        raise ApiError(422, str(exc), {"strategies": describe_strategies()}) from exc


@router.post("", status_code=201, response_model=s.JobPublic, responses=WRITE_ERRORS)
def create_job(body: s.JobCreate, session: SessionDep, settings: SettingsDep, driver: DriverDep,
               principal: AdminAccess) -> s.JobPublic:
    """Queue a tuning job; the job driver proposes configs and agents of the selected device measure them."""
    if body.trials > settings.max_trials_per_job:
        raise ApiError(422, f"trials={body.trials} is over this server's limit of {settings.max_trials_per_job}",
                       {"max_trials_per_job": settings.max_trials_per_job})
    workload = workload_of(body.op, body.params)
    options = _strategy_options(body.strategy, body.strategy_options)
    if body.device not in ("cpu", "cuda"):
        require_device(body.device, session)
    spec = JobSpec(workload.key, body.device, body.trials, body.strategy, options, body.priority,
                   created_by=principal.author, seed=body.seed,
                   measure_options=body.measure.model_dump(exclude_none=True))
    job = repo.create_job(spec, session=session, limits=JobLimits.from_settings(settings),
                          known_strategies=frozenset(STRATEGIES))
    out = job_public(job, repo.job_progress(job.id, session=session))
    session.commit()
    wake_driver(driver)
    return out


@router.get("", response_model=s.Page[s.JobPublic], responses=documented(401, 422))
def list_jobs(session: SessionDep, _: ReadAccess, state: Literal[JOB_STATES] | None = None,  # type: ignore[valid-type]
              workload: WorkloadKey = None, device_class: DeviceClassFilter = None, limit: Limit = 50,
              offset: Offset = 0) -> s.Page[s.JobPublic]:
    """Newest first. `state`: one of queued, running, done, failed, cancelled; `workload`: a workload key."""
    try:
        page = repo.list_jobs(session=session, state=state, workload_key=workload, device_class=device_class,
                              limit=limit, offset=offset)
    except repo.NotFound:  # a workload never tuned has no jobs
        return s.Page[s.JobPublic](items=[], total=0, limit=limit, offset=offset)
    return s.Page[s.JobPublic](items=[job_public(j) for j in page.items], total=page.total, limit=limit,
                               offset=offset)


@router.get("/{job_id}", response_model=s.JobPublic, responses=READ_ERRORS)
def get_job(job_id: PathId, session: SessionDep, _: ReadAccess) -> s.JobPublic:
    """State and progress: trials completed, verified and failed out of the budget, tasks queued and leased, the
    fastest verified trial so far with its GFLOP/s and GB/s, and once the job ended its `result`: the head
    re-measured head to head, with the reference library and the untuned default timed in the same rounds."""
    job = repo.get_job(job_id, session=session)
    return job_public(job, repo.job_progress(job.id, session=session), comparisons.job_result(job, session=session))


@router.get("/{job_id}/comparisons", response_model=list[s.ComparisonPublic], responses=READ_ERRORS)
def list_job_comparisons(job_id: PathId, session: SessionDep, _: ReadAccess) -> list[s.ComparisonPublic]:
    """The job's head-to-head comparisons, oldest first: challenges during the search, then the final ones."""
    job = repo.get_job(job_id, session=session)
    return [comparison_public(c) for c in comparisons.list_comparisons(job.id, session=session)]


@router.get("/{job_id}/trials", response_model=s.Page[s.TrialPublic], responses=READ_ERRORS)
def list_job_trials(job_id: PathId, session: SessionDep, _: ReadAccess,
                    status: Literal[TRIAL_STATUSES] | None = None,  # type: ignore[valid-type]
                    limit: Limit = 100, offset: Offset = 0) -> s.Page[s.TrialPublic]:
    """The job's trials, oldest first; `status` filters (OK, COMPILE_ERROR, ...)."""
    job = repo.get_job(job_id, session=session)
    page = repo.list_trials(session=session, job_id=job.id, status=status, limit=limit, offset=offset)
    return s.Page[s.TrialPublic](items=[trial_public(t, job.workload) for t in page.items], total=page.total,
                                 limit=limit, offset=offset)


@router.get("/{job_id}/curve", response_model=s.CurvePublic, responses=READ_ERRORS)
def get_job_curve(job_id: PathId, session: SessionDep, _: ReadAccess,
                  limit: Annotated[int, Query(ge=1, le=MAX_CURVE_POINTS)] = MAX_CURVE_POINTS) -> s.CurvePublic:
    """The tuning curve: every trial oldest first (time, status, median, GFLOP/s), the untuned default's trial
    and the reference library's median from the newest head-to-head comparison."""
    job = repo.get_job(job_id, session=session)
    return curve_public(job, repo.job_curve(job, session=session, limit=limit), limit)


@router.delete("/{job_id}", response_model=s.JobPublic, responses=documented(401, 403, 404, 409, 422))
def cancel_job(job_id: PathId, session: SessionDep, driver: DriverDep, _: AdminAccess) -> s.JobPublic:
    """Cancel a queued or running job (409 if it already ended); measured trials stay."""
    job = repo.cancel_job(job_id, session=session)
    out = job_public(job, repo.job_progress(job.id, session=session))
    session.commit()
    wake_driver(driver)
    return out
