"""Repository functions: the only code that queries the database.

Plain functions with a keyword-only `session=`; they flush but never commit (wrap a request in
`tuner_server.db.session_scope`). They take and return ORM rows or the records in `records.py`, raise the
errors in `errors.py`, and never see HTTP or gRPC types. Schedule functions are used module-qualified:
`from tuner_server.repo import schedules; schedules.head(key, device_class, session=s)`.
"""
from tuner_server.repo import schedules
from tuner_server.repo.agents import (
    authenticate_agent,
    ensure_device,
    get_agent,
    heartbeat,
    list_agents,
    list_devices,
    mark_lost_agents,
    register_agent,
)
from tuner_server.repo.errors import Conflict, ImportFormatError, InvalidRequest, NotFound, RepoError
from tuner_server.repo.exchange import export_jsonl, import_jsonl
from tuner_server.repo.jobs import cancel_job, create_job, finish_job, get_job, job_progress, list_jobs
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
    TrialReport,
    VersionDiff,
)
from tuner_server.repo.results import record_result
from tuner_server.repo.tasks import enqueue_configs, lease_tasks, requeue_expired, return_leases
from tuner_server.repo.tokens import authenticate_token, create_token, list_tokens, register_token, revoke_token
from tuner_server.repo.trials import get_trial, list_trials, transfer_trials
from tuner_server.repo.workloads import find_workload, get_or_create_workload

__all__ = [
    "Conflict", "DeviceSummary", "ImportCounts", "ImportFormatError", "InvalidRequest", "JobLimits", "JobProgress",
    "JobSpec", "LeasedTask", "NotFound", "Page", "RecordOutcome", "Registration", "RepoError", "Requeued",
    "TrialReport", "VersionDiff", "authenticate_agent", "authenticate_token", "cancel_job", "create_job",
    "create_token", "enqueue_configs", "ensure_device", "export_jsonl", "find_workload", "finish_job", "get_agent",
    "get_job", "get_or_create_workload", "get_trial", "heartbeat", "import_jsonl", "job_progress", "lease_tasks",
    "list_agents", "list_devices", "list_jobs", "list_tokens", "list_trials", "mark_lost_agents", "record_result",
    "transfer_trials",
    "register_agent", "register_token", "requeue_expired", "return_leases", "revoke_token", "schedules",
]
