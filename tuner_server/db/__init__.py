"""The versioned farm database: models, engine/sessions and Alembic migrations."""
from tuner_server.db.engine import (
    make_engine,
    make_session_factory,
    normalize_url,
    read_only_sessions,
    session_scope,
    statement_sessions,
)
from tuner_server.db.migrate import current_revision, upgrade_to_head
from tuner_server.db.models import (
    Agent,
    ApiToken,
    Base,
    Comparison,
    Device,
    Job,
    ScheduleHead,
    ScheduleVersion,
    Task,
    Trial,
    Workload,
)
from tuner_server.db.types import new_id, utcnow

__all__ = [
    "Agent", "ApiToken", "Base", "Comparison", "Device", "Job", "ScheduleHead", "ScheduleVersion", "Task", "Trial",
    "Workload",
    "current_revision", "make_engine", "make_session_factory", "new_id", "normalize_url", "read_only_sessions",
    "session_scope", "statement_sessions",
    "upgrade_to_head", "utcnow",
]
