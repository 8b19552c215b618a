"""Initial schema: workloads, devices, agents, jobs, tasks, trials, schedule versions and heads, API tokens.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

ID = sa.String(36)
CLASS = sa.String(128)


def _ts(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _col(name: str, type_, nullable: bool = False) -> sa.Column:
    return sa.Column(name, type_, nullable=nullable)


def _fk(column: str, table: str, target: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint([column], [f"{target}"], name=op.f(f"fk_{table}_{column}_{target.split('.')[0]}"))


def _check(table: str, column: str, values: tuple[str, ...]) -> sa.CheckConstraint:
    quoted = ", ".join(f"'{v}'" for v in values)
    return sa.CheckConstraint(f"{column} IN ({quoted})", name=op.f(f"ck_{table}_{column}"))


def _pk(table: str, *columns: str) -> sa.PrimaryKeyConstraint:
    return sa.PrimaryKeyConstraint(*columns, name=op.f(f"pk_{table}"))


def _unique(table: str, *columns: str) -> sa.UniqueConstraint:
    return sa.UniqueConstraint(*columns, name=op.f(f"uq_{table}_{'_'.join(columns)}"))


def _index(table: str, *columns: str) -> None:
    op.create_index(op.f(f"ix_{table}_{'_'.join(columns)}"), table, list(columns), unique=False)


def upgrade() -> None:
    op.create_table(
        "api_tokens",
        _col("id", ID), _col("name", sa.String(128)), _col("token_hash", sa.String(64)),
        _col("scope", sa.String(8)), _ts("created_at"), _col("revoked", sa.Boolean()),
        _check("api_tokens", "scope", ("read", "admin")), _pk("api_tokens", "id"), _unique("api_tokens", "token_hash"),
    )
    op.create_table(
        "devices",
        _col("device_class", CLASS), _col("kind", sa.String(16)), _col("fingerprint", sa.JSON()), _ts("first_seen"),
        _pk("devices", "device_class"),
    )
    op.create_table(
        "workloads",
        _col("id", ID), _col("key", sa.String(512)), _col("op", sa.String(64)), _col("params", sa.JSON()),
        _col("flops", sa.BigInteger(), True), _col("bytes", sa.BigInteger(), True), _ts("created_at"),
        _pk("workloads", "id"), _unique("workloads", "key"),
    )
    _index("workloads", "op")
    op.create_table(
        "agents",
        _col("id", ID), _col("name", sa.String(128)), _col("device_class", CLASS), _col("fingerprint", sa.JSON()),
        _col("session_token_hash", sa.String(64)), _col("codegen_version", sa.String(64)),
        _ts("registered_at"), _ts("last_heartbeat"), _col("status", sa.String(8)),
        _check("agents", "status", ("active", "lost", "gone")),
        _fk("device_class", "agents", "devices.device_class"), _pk("agents", "id"),
    )
    _index("agents", "device_class")
    _index("agents", "status")
    op.create_table(
        "jobs",
        _col("id", ID), _col("workload_id", ID), _col("device_selector", CLASS), _col("device_class", CLASS, True),
        _col("strategy", sa.String(32)), _col("strategy_options", sa.JSON()), _col("trial_budget", sa.Integer()),
        _col("priority", sa.Integer()), _col("state", sa.String(16)), _col("error", sa.Text(), True),
        _ts("created_at"), _ts("started_at", True), _ts("finished_at", True),
        _col("created_by", sa.String(128), True), _col("seed", sa.BigInteger(), True),
        _col("measure_options", sa.JSON()),
        _check("jobs", "state", ("queued", "running", "done", "failed", "cancelled")),
        _fk("device_class", "jobs", "devices.device_class"), _fk("workload_id", "jobs", "workloads.id"),
        _pk("jobs", "id"),
    )
    _index("jobs", "state")
    _index("jobs", "workload_id")
    op.create_table(
        "schedule_heads",
        _col("workload_id", ID), _col("device_class", CLASS), _col("head_version", sa.Integer(), True),
        _col("pinned", sa.Boolean()), _col("pinned_version", sa.Integer(), True), _ts("updated_at"),
        _fk("device_class", "schedule_heads", "devices.device_class"),
        _fk("workload_id", "schedule_heads", "workloads.id"),
        _pk("schedule_heads", "workload_id", "device_class"),
    )
    op.create_table(
        "tasks",
        _col("id", ID), _col("job_id", ID), _col("config", sa.JSON()), _col("config_key", sa.Text()),
        _col("position", sa.Integer()), _col("attempt", sa.Integer()), _col("state", sa.String(16)),
        _col("agent_id", ID, True),
        _ts("lease_deadline", True), _ts("created_at"),
        _check("tasks", "state", ("queued", "leased", "done", "lost", "cancelled")),
        _fk("agent_id", "tasks", "agents.id"), _fk("job_id", "tasks", "jobs.id"),
        _pk("tasks", "id"), _unique("tasks", "job_id", "config_key"),
    )
    _index("tasks", "agent_id")
    _index("tasks", "lease_deadline")
    _index("tasks", "state", "job_id")
    op.create_table(
        "trials",
        _col("id", ID), _col("task_id", ID, True), _col("attempt", sa.Integer(), True), _col("job_id", ID, True),
        _col("workload_id", ID), _col("device_class", CLASS), _col("agent_id", ID, True),
        _col("config", sa.JSON()), _col("config_key", sa.Text()), _col("codegen_version", sa.String(64)),
        _col("status", sa.String(24)), _col("samples", sa.JSON()),
        _col("median_s", sa.Double(), True), _col("ci_low_s", sa.Double(), True),
        _col("ci_high_s", sa.Double(), True), _col("error", sa.Text(), True),
        _col("compile_s", sa.Double(), True), _col("max_abs_error", sa.Double(), True),
        _col("content_id", sa.String(64)), _ts("created_at"),
        _check("trials", "status", ("OK", "COMPILE_ERROR", "RUNTIME_ERROR", "TIMEOUT", "WRONG_ANSWER",
                                    "RESOURCE_EXCEEDED", "AGENT_LOST")),
        _fk("agent_id", "trials", "agents.id"), _fk("device_class", "trials", "devices.device_class"),
        _fk("job_id", "trials", "jobs.id"), _fk("task_id", "trials", "tasks.id"),
        _fk("workload_id", "trials", "workloads.id"),
        _pk("trials", "id"), _unique("trials", "task_id", "attempt"),
    )
    _index("trials", "content_id")
    _index("trials", "job_id")
    _index("trials", "workload_id", "device_class")
    op.create_table(
        "schedule_versions",
        _col("id", ID), _col("workload_id", ID), _col("device_class", CLASS), _col("version", sa.Integer()),
        _col("parent_version", sa.Integer(), True), _col("trial_id", ID), _col("reason", sa.String(16)),
        _col("pinned", sa.Boolean()), _col("author", sa.String(128), True), _col("job_id", ID, True),
        _col("message", sa.Text(), True), _ts("created_at"),
        _check("schedule_versions", "reason", ("improved", "rollback", "pin", "import", "revalidated")),
        _fk("device_class", "schedule_versions", "devices.device_class"),
        _fk("job_id", "schedule_versions", "jobs.id"), _fk("trial_id", "schedule_versions", "trials.id"),
        _fk("workload_id", "schedule_versions", "workloads.id"),
        _pk("schedule_versions", "id"), _unique("schedule_versions", "workload_id", "device_class", "version"),
    )


def downgrade() -> None:
    for table in ("schedule_versions", "trials", "tasks", "schedule_heads", "jobs", "agents", "workloads",
                  "devices", "api_tokens"):
        op.drop_table(table)
