"""Exchange with other farms: GET /v1/export streams JSON lines; POST /v1/import (admin) merges them."""
from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse

import compiler_core as cc
from tuner_server import repo
from tuner_server.api import schemas as s
from tuner_server.api.deps import AdminAccess, ReadAccess, SessionDep
from tuner_server.api.errors import ApiError

router = APIRouter(prefix="/v1", tags=["exchange"])
NDJSON = "application/x-ndjson"
SPOOL_IN_MEMORY_BYTES = 16 << 20  # larger exports go to a temporary file
CHUNK_BYTES = 1 << 16
ERRORS = {code: {"model": s.ErrorBody} for code in (400, 401, 403, 413, 422)}


@router.get("/export", response_class=StreamingResponse, responses={200: {"content": {NDJSON: {}}}, **ERRORS})
def export(session: SessionDep, _: ReadAccess, op: str | None = None,
           workload: Annotated[str | None, Query(description="a workload key, e.g. matmul(M=64,N=64,K=64)")] = None,
           device_class: str | None = None) -> StreamingResponse:
    """Workloads, devices, trials and schedule versions matching the filters, one JSON object per line (the
    format POST /v1/import reads). Read in one transaction into a spooled temporary file, then streamed: a slow
    download never holds the database (on SQLite, the write lock every transaction takes)."""
    if op is not None:
        cc.get_op(op)  # unknown op: 422 naming the known ones
    if workload is not None:
        workload = cc.parse_key(workload).key
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY_BYTES)
    try:
        for line in repo.export_jsonl(session=session, workload_key=workload, device_class=device_class, op=op):
            spool.write(line.encode() + b"\n")
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return StreamingResponse(_chunks(spool), media_type=NDJSON,
                             headers={"Content-Disposition": 'attachment; filename="tunefarm-export.jsonl"'})


def _chunks(spool) -> Iterator[bytes]:
    try:
        while block := spool.read(CHUNK_BYTES):
            yield block
    finally:
        spool.close()


async def raw_body(request: Request) -> bytes:
    return await request.body()


@router.post("/import", response_model=s.ImportResult, responses=ERRORS,
             openapi_extra={"requestBody": {"required": True, "content": {NDJSON: {"schema": {"type": "string"}}}}})
def import_(principal: AdminAccess, body: Annotated[bytes, Depends(raw_body)], session: SessionDep) -> s.ImportResult:
    """Merge an export (JSON lines) into this farm: new trials are appended, duplicates skipped, and each key's
    exported head becomes a version with reason 'import' where it beats the local head. All or nothing: a
    malformed line is a 422 listing every problem, and nothing is written."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(400, f"import body is not UTF-8: {exc}") from exc
    lines = text.splitlines()
    if not any(line.strip() for line in lines):
        raise ApiError(422, "empty import: send the JSON lines GET /v1/export writes")
    counts = repo.import_jsonl(lines, session=session, author=principal.author)
    session.commit()
    return s.ImportResult(workloads=counts.workloads, devices=counts.devices, trials=counts.trials,
                          duplicate_trials=counts.duplicate_trials, versions=counts.versions)
