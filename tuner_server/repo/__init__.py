"""Repository functions: the only code that queries the database.

Plain functions with a keyword-only `session=`; they flush but never commit (wrap a request in
`tuner_server.db.session_scope`). They take and return ORM rows or the records in `records.py`, raise the
errors in `errors.py`, and never see HTTP or gRPC types. Schedule functions are used module-qualified:
`from tuner_server.repo import schedules; schedules.head(key, device_class, session=s)`. The job driver's reads of
every pass take a Connection instead (`pass_reads`, also module-qualified).
"""
from tuner_server.repo import pass_reads, schedules
from tuner_server.repo.agents import (
    authenticate_agent,
    ensure_device,
    get_agent,
    heartbeat,
    leases_by_agent,
    leave,
    list_agents,
    list_devices,
    mark_lost_agents,
    register_agent,
)
from tuner_server.repo.cost_models import (
    class_training_trials,
    count_class_trials,
    get_features,
    latest_cost_model,
    list_cost_models,
    put_features,
    save_cost_model,
)
from tuner_server.repo.curves import JobCurve, job_curve
from tuner_server.repo.errors import Conflict, ImportFormatError, InvalidRequest, NotFound, RepoError
from tuner_server.repo.exchange import export_jsonl, import_jsonl
from tuner_server.repo.jobs import (
    cancel_job,
    create_job,
    finish_job,
    get_job,
    job_progress,
    list_jobs,
    open_job_for,
    record_start_model,
)
from tuner_server.repo.records import (
    DeviceSummary,
    ImportCounts,
    JobLimits,
    JobProgress,
    JobSpec,
    LeasedTask,
    Page,
    RecordOutcome,
    Registration,
    Requeued,
    ScheduleKeySummary,
    TrainingRow,
    TrialReport,
    VersionDiff,
)
from tuner_server.repo.results import record_result
from tuner_server.repo.tasks import enqueue_configs, lease_tasks, requeue_expired, return_leases
from tuner_server.repo.tokens import (
    authenticate_token,
    create_token,
    find_token,
    list_tokens,
    register_token,
    revoke_token,
)
from tuner_server.repo.trials import get_trial, list_trials, transfer_trials
from tuner_server.repo.workloads import find_workload, get_or_create_workload

__all__ = [
    "Conflict", "DeviceSummary", "ImportCounts", "ImportFormatError", "InvalidRequest", "JobCurve", "JobLimits",
    "JobProgress", "JobSpec", "LeasedTask", "NotFound", "Page", "RecordOutcome", "Registration", "RepoError",
    "Requeued", "ScheduleKeySummary", "TrainingRow", "TrialReport", "VersionDiff", "authenticate_agent",
    "authenticate_token", "cancel_job", "class_training_trials", "count_class_trials", "create_job", "create_token",
    "enqueue_configs", "ensure_device", "export_jsonl", "find_token", "find_workload", "finish_job", "get_agent",
    "get_features",
    "get_job", "get_or_create_workload", "get_trial", "heartbeat", "leave", "import_jsonl", "job_curve", "job_progress",
    "latest_cost_model", "lease_tasks", "leases_by_agent", "list_agents",
    "list_cost_models", "list_devices", "list_jobs", "list_tokens", "list_trials", "mark_lost_agents",
    "open_job_for",
    "put_features", "record_result", "record_start_model", "register_agent", "register_token", "requeue_expired",
    "return_leases",
    "pass_reads", "revoke_token", "save_cost_model", "schedules", "transfer_trials",
]
