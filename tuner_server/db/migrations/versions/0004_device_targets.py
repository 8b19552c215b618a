"""Device targets: each devices row's fingerprint gains the compiler target its agents generate code for.

Agents of this release send their Target when they register (read off the device) and the server builds spaces
and features from the stored one. Rows recorded before get the target their class implied until now (the
numbers below are frozen here: what the class name used to be parsed into, so the upgrade never depends on
later code); an agent registering later fills in a row that still lacks one. Downgrading drops the targets.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25
"""
from __future__ import annotations

import re

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_CPU = re.compile(r"cpu-(?P<arch>.+)-(?P<isa>[a-z0-9_]+)-(?P<cores>\d+)c")
_CUDA = re.compile(r"cuda-.+-sm(?P<sm>\d+)")
_VECTOR = {"avx512f": ("avx512f", 64), "avx2": ("avx2", 32)}  # else the 16-byte 'sse' target
_OPT_IN = {70: 96, 72: 96, 75: 64, 80: 163, 86: 99, 87: 163, 89: 99, 90: 227}  # KiB per block


def legacy_target(device_class: str) -> dict | None:
    if m := _CPU.fullmatch(device_class):
        suffix, vector = _VECTOR.get(m["isa"], ("sse", 16))
        return {"kind": "c", "arch": f"{m['arch']}-{suffix}", "max_threads_per_block": 1, "max_shared_bytes": 0,
                "warp_size": 1, "vector_bytes": vector, "cores": int(m["cores"]), "max_registers_per_thread": 255,
                "register_file": 0, "max_dynamic_shared_bytes": 0, "sm_count": 0, "l2_bytes": 0, "tensor_cores": []}
    if (m := _CUDA.fullmatch(device_class)) and int(m["sm"]) >= 70:
        sm = int(m["sm"])
        cores = ["wmma_f16"] + (["mma_bf16"] if sm >= 80 else [])
        opt_in = _OPT_IN.get(sm) or _OPT_IN[max(k for k in _OPT_IN if k <= sm)]
        return {"kind": "cuda", "arch": f"sm_{sm}", "max_threads_per_block": 1024, "max_shared_bytes": 48 * 1024,
                "warp_size": 32, "vector_bytes": 16, "cores": 0, "max_registers_per_thread": 255,
                "register_file": 65536, "max_dynamic_shared_bytes": opt_in * 1024, "sm_count": 0, "l2_bytes": 0,
                "tensor_cores": cores}
    return None


_DEVICES = sa.table("devices", sa.column("device_class", sa.String), sa.column("fingerprint", sa.JSON))


def _rows(conn):
    return conn.execute(sa.select(_DEVICES.c.device_class, _DEVICES.c.fingerprint)).fetchall()


def _write(conn, device_class: str, fingerprint: dict) -> None:
    conn.execute(_DEVICES.update().where(_DEVICES.c.device_class == device_class).values(fingerprint=fingerprint))


def _loaded(value) -> dict:
    return dict(value) if isinstance(value, dict) else {}


def upgrade() -> None:
    conn = op.get_bind()
    for device_class, raw in _rows(conn):
        fingerprint = _loaded(raw)
        if "target" not in fingerprint and (target := legacy_target(device_class)) is not None:
            _write(conn, device_class, {**fingerprint, "target": target})


def downgrade() -> None:
    conn = op.get_bind()
    for device_class, raw in _rows(conn):
        fingerprint = _loaded(raw)
        if "target" in fingerprint:
            _write(conn, device_class, {k: v for k, v in fingerprint.items() if k != "target"})
