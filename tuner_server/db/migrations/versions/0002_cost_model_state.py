"""Cost-model state: cached config feature vectors, fitted cost models per device class, and an index on a class's
newest trials (what a class model is trained on).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
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


def _pk(table: str, *columns: str) -> sa.PrimaryKeyConstraint:
    return sa.PrimaryKeyConstraint(*columns, name=op.f(f"pk_{table}"))


def _unique(table: str, *columns: str) -> sa.UniqueConstraint:
    return sa.UniqueConstraint(*columns, name=op.f(f"uq_{table}_{'_'.join(columns)}"))


def _index(table: str, *columns: str) -> None:
    op.create_index(op.f(f"ix_{table}_{'_'.join(columns)}"), table, list(columns), unique=False)


def upgrade() -> None:
    op.create_table(
        "config_features",
        _col("id", ID), _col("workload_id", ID), _col("feature_set", sa.String(64)), _col("config_key", sa.Text()),
        _col("vector", sa.LargeBinary()), _ts("created_at"),
        _fk("workload_id", "config_features", "workloads.id"),
        _pk("config_features", "id"), _unique("config_features", "workload_id", "feature_set", "config_key"),
    )
    _index("config_features", "feature_set")
    op.create_table(
        "cost_models",
        _col("id", ID), _col("device_class", CLASS), _col("feature_set", sa.String(64)), _col("version", sa.Integer()),
        _col("objective", sa.String(32)), _col("trained_on", sa.Integer()), _col("workloads", sa.Integer()),
        _ts("newest_trial_at", True), _col("fit_s", sa.Double()), _col("blob", sa.LargeBinary()), _ts("created_at"),
        _fk("device_class", "cost_models", "devices.device_class"),
        _pk("cost_models", "id"), _unique("cost_models", "device_class", "feature_set", "version"),
    )
    _index("trials", "device_class", "created_at")


def downgrade() -> None:
    op.drop_index(op.f("ix_trials_device_class_created_at"), table_name="trials")
    op.drop_index(op.f("ix_config_features_feature_set"), table_name="config_features")
    for table in ("cost_models", "config_features"):
        op.drop_table(table)
