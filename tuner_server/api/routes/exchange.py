"""Exchange with other farms: GET /v1/export streams JSON lines; POST /v1/import (admin) merges them."""
from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse

from tuner_server import repo
from tuner_server.api import schemas as s
from tuner_server.api.deps import AdminAccess, DeviceClassFilter, ReadAccess, SessionDep, WorkloadKey
from tuner_server.api.errors import ApiError, documented
from tuner_server.api.json_body import StrictJSONRoute

router = APIRouter(prefix="/v1", tags=["exchange"], route_class=StrictJSONRoute)
NDJSON = "application/x-ndjson"
SPOOL_IN_MEMORY_BYTES = 16 << 20  # larger exports go to a temporary file
CHUNK_BYTES = 1 << 16


@router.get("/export", response_class=StreamingResponse,
            responses={200: {"content": {NDJSON: {}}}, **documented(401, 422)})
def export(session: SessionDep, _: ReadAccess, op: s.OpName | None = None, workload: WorkloadKey = None,
           device_class: DeviceClassFilter = None) -> StreamingResponse:
    """Workloads, devices, trials and schedule versions matching the filters, one JSON object per line (the
    format POST /v1/import reads; strict JSON: no NaN or Infinity). Read in one transaction into a spooled
    temporary file, then streamed: a slow download never holds the database (on SQLite, the write lock every
    transaction takes)."""
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


@router.post("/import", response_model=s.ImportResult, responses=documented(400, 401, 403, 413, 422),
             openapi_extra={"requestBody": {"required": True, "content": {NDJSON: {"schema": {"type": "string"}}}}})
def import_(principal: AdminAccess, body: Annotated[bytes, Depends(raw_body)], session: SessionDep) -> s.ImportResult:
    """Merge an export (JSON lines) into this farm: new trials are appended, duplicates skipped, and each key's
    exported head becomes a version with reason 'import' where it beats the local head. All or nothing: a
    malformed line is a 422 listing every problem, and nothing is written. A line is refused for a field its type
    does not have, a trial id that is not a UUID, and a trial of a device class this farm does not know that no
    `device` line before it introduces with a fingerprint describing that class (repo/exchange.py)."""
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
