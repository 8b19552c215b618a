"""A job's start model: the device class's cost model (its class, version and training size) that the job's
strategy was last built from, its own class's or, with too little history, another class's of the same kind
(cross-device warm start). Null while no model was used. Jobs recorded before have none. Downgrading drops it.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-29
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("start_model", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("start_model")
