"""The measurement protocol: head-to-head comparisons, COMPARE tasks, a job's phase, and each trial's noise
record (contention share, noisy flag, threads and cores).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

ID = sa.String(36)
CLASS = sa.String(128)


def _col(name: str, type_, nullable: bool = False, **kw) -> sa.Column:
    return sa.Column(name, type_, nullable=nullable, **kw)


def _fk(column: str, table: str, target: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint([column], [target], name=op.f(f"fk_{table}_{column}_{target.split('.')[0]}"))


def _check(table: str, column: str, values: tuple[str, ...]) -> sa.CheckConstraint:
    quoted = ", ".join(f"'{v}'" for v in values)
    return sa.CheckConstraint(f"{column} IN ({quoted})", name=op.f(f"ck_{table}_{column}"))


def upgrade() -> None:
    with op.batch_alter_table("tasks") as batch:  # SQLite: a CHECK constraint needs the table rebuilt
        batch.add_column(_col("kind", sa.String(8), server_default="MEASURE"))
        batch.add_column(_col("purpose", sa.String(16), True))
        batch.add_column(_col("candidate_trial_id", ID, True))
        batch.add_column(_col("baseline_trial_id", ID, True))
        batch.add_column(_col("time_reference", sa.Boolean(), True))
        batch.create_check_constraint("kind", "kind IN ('MEASURE', 'COMPARE')")
    with op.batch_alter_table("trials") as batch:
        batch.add_column(_col("contention", sa.Double(), True))
        batch.add_column(_col("noisy", sa.Boolean(), True))
        batch.add_column(_col("threads", sa.Integer(), True))
        batch.add_column(_col("cpus", sa.String(256), True))
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(_col("phase", sa.String(16), server_default="search"))
    op.create_table(
        "comparisons",
        _col("id", ID), _col("task_id", ID), _col("attempt", sa.Integer()), _col("job_id", ID),
        _col("workload_id", ID), _col("device_class", CLASS), _col("agent_id", ID, True),
        _col("candidate_trial_id", ID), _col("baseline_trial_id", ID), _col("purpose", sa.String(16)),
        _col("outcome", sa.String(16)), _col("codegen_version", sa.String(64)),
        _col("candidate_samples", sa.JSON()), _col("baseline_samples", sa.JSON()), _col("reference_samples", sa.JSON()),
        _col("reference_name", sa.String(32), True), _col("ratio", sa.Double(), True),
        _col("ratio_ci_low", sa.Double(), True), _col("ratio_ci_high", sa.Double(), True),
        _col("contention", sa.Double(), True), _col("noisy", sa.Boolean(), True), _col("threads", sa.Integer(), True),
        _col("error", sa.Text(), True), _col("created_at", sa.DateTime(timezone=True)),
        _fk("task_id", "comparisons", "tasks.id"), _fk("job_id", "comparisons", "jobs.id"),
        _fk("workload_id", "comparisons", "workloads.id"), _fk("device_class", "comparisons", "devices.device_class"),
        _fk("agent_id", "comparisons", "agents.id"), _fk("candidate_trial_id", "comparisons", "trials.id"),
        _fk("baseline_trial_id", "comparisons", "trials.id"),
        _check("comparisons", "purpose", ("challenge", "final")),
        _check("comparisons", "outcome", ("promoted", "kept", "stale", "failed")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_comparisons")),
        sa.UniqueConstraint("task_id", "attempt", name=op.f("uq_comparisons_task_id_attempt")),
    )
    op.create_index(op.f("ix_comparisons_job_id"), "comparisons", ["job_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_comparisons_job_id"), table_name="comparisons")
    op.drop_table("comparisons")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("phase")
    with op.batch_alter_table("trials") as batch:
        for column in ("cpus", "threads", "noisy", "contention"):
            batch.drop_column(column)
    with op.batch_alter_table("tasks") as batch:
        batch.drop_constraint(op.f("ck_tasks_kind"), type_="check")  # op.f: already the final name
        for column in ("time_reference", "baseline_trial_id", "candidate_trial_id", "purpose", "kind"):
            batch.drop_column(column)
