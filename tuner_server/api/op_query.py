"""Query parameters of /v1/best, /v1/best/history and /v1/best/diff: the op, its params, the device and the rest.

An op's params travel as query parameters beside `op` (`?op=matmul&M=512&N=512&K=512&device=...`). Every param
name that some op takes is declared here once, with its type and the widest bounds any op allows, so the OpenAPI
lists them and a generated client can send them; which ones an op needs, and its own bounds, are in GET /v1/ops,
and `workload()` checks them. A query parameter that is neither declared here nor a param of any op is a 422, and so
is one given twice or an integer that is not plain digits (api/query_rules.py, on the route and the hot path).
`device` is 'cpu', 'cuda' or an exact class; the routes resolve a kind to the farm's class (inputs.resolve_device).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

import compiler_core as cc
from tuner_server import bounds
from tuner_server.api import schemas as s
from tuner_server.api.inputs import workload_of
from tuner_server.predict import DEFAULT_CANDIDATES, MAX_CANDIDATES

QueryVersion = Annotated[int, Field(ge=1, le=bounds.MAX_VERSION)]


def _param_field(uses: list[tuple[str, cc.Param]]) -> tuple[Any, Any]:
    """One optional query parameter for a param name, from every op that takes it."""
    ops = ", ".join(op for op, _ in uses)
    docs = "; ".join(sorted({f"{op}: {p.doc}" for op, p in uses if p.doc}))
    if all(p.kind == "int" for _, p in uses):
        low, high = min(p.lo for _, p in uses), max(p.hi for _, p in uses)
        return int | None, Field(None, ge=low, le=high, description=f"taken by {ops}. {docs}".strip())
    choices = {p.choices for _, p in uses}
    if len(choices) == 1 and () not in choices:
        return Literal[choices.pop()] | None, Field(None, description=f"taken by {ops}. {docs}".strip())
    return str | None, Field(None, max_length=s.MAX_PARAM_TEXT, pattern=s.NO_NUL,
                             description=f"taken by {ops}. {docs}".strip())


def _op_params_model() -> type[BaseModel]:
    uses: dict[str, list[tuple[str, cc.Param]]] = defaultdict(list)
    for op in sorted(cc.OPS):
        for param in cc.get_op(op).params:
            uses[param.name].append((op, param))
    return create_model("OpParamsQuery", __config__=ConfigDict(extra="forbid"),
                        op=(s.OpName, Field(description="the op; its params are the query parameters below")),
                        device=(s.DeviceSelector, ...),
                        **{name: _param_field(found) for name, found in sorted(uses.items())})


OpParamsQuery = _op_params_model()
PARAM_NAMES = frozenset(OpParamsQuery.model_fields) - {"op", "device"}


class KeyQuery(OpParamsQuery):  # type: ignore[misc, valid-type]
    """(op, params, device): one key of the best-schedule history."""

    def workload(self) -> cc.Workload:
        """The workload of the params given (422 naming a missing, extra or out-of-range param of this op)."""
        given = {name: getattr(self, name) for name in PARAM_NAMES & self.model_fields_set}
        return workload_of(self.op, {k: v for k, v in given.items() if v is not None})


class BestQuery(KeyQuery):
    version: QueryVersion | None = Field(None, description="an earlier version instead of the head")
    as_of: str | None = Field(None, max_length=64, json_schema_extra={"format": "date-time"},
                              description=f"the head at this ISO 8601 time with a zone, between "
                                          f"{bounds.EARLIEST.isoformat()} and {bounds.LATEST.isoformat()}")
    include_source: bool = Field(False, description="add the kernel source generated for the class's target")
    predict: bool = Field(False, description="for a key with no head: the config the class's cost model ranks "
                                             "best (a PredictedBest, never a measurement) instead of a 404")
    candidates: Annotated[int, Field(ge=1, le=MAX_CANDIDATES,
                                     description="configs the model ranks, with predict=true")] = DEFAULT_CANDIDATES
    enqueue: bool = Field(False, description="with predict=true (admin): also queue a tuning job for the key, "
                                             "unless one is open; also when the class has no model to predict with "
                                             "(the 404's detail.enqueued_job)")
    enqueue_trials: Annotated[int, Field(ge=1, le=bounds.MAX_INT32,
                                         description="the queued job's trial budget")] = 64


class HistoryQuery(KeyQuery):
    limit: Annotated[int, Field(ge=1, le=1000, description="page size")] = 50
    offset: Annotated[int, Field(ge=0, le=bounds.MAX_OFFSET, description="items to skip")] = 0


class DiffQuery(KeyQuery):
    v1: QueryVersion
    v2: QueryVersion
