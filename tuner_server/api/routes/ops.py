"""GET /v1/ops: the ops users may tune (params, dtypes), each target's knobs, and the search strategies.

A space depends on the workload's sizes, so each op's knobs are shown for one example workload (EXAMPLE_PARAMS);
the knob names are the same for every workload of the op and target, the choices may differ.
"""
from __future__ import annotations

import functools
from typing import Any

from fastapi import APIRouter

import compiler_core as cc
from compiler_core.workload import MAX_TENSOR_ELEMS
from tuner_server.api import schemas as s
from tuner_server.api.deps import Limit, Offset, ReadAccess, SettingsDep
from tuner_server.api.errors import documented
from tuner_server.api.json_body import StrictJSONRoute
from tuner_server.search import describe_strategies

router = APIRouter(prefix="/v1", tags=["ops"], route_class=StrictJSONRoute)

EXAMPLE_PARAMS: dict[str, dict[str, Any]] = {
    "matmul": {"M": 1024, "N": 1024, "K": 1024},
    "batch_matmul": {"batch": 8, "M": 512, "N": 512, "K": 512},
    "conv2d": {"N": 1, "C": 64, "H": 56, "W": 56, "K": 64, "R": 3, "S": 3, "pad": 1},
    "softmax": {"rows": 4096, "cols": 1024},
    "layernorm": {"rows": 4096, "cols": 1024},
    "reduce_sum": {"rows": 4096, "cols": 1024},
    "transpose": {"rows": 2048, "cols": 2048},
    "elementwise": {"rows": 1024, "cols": 4096, "expr": "gelu(x*w+b)", "vectors": "w,b"},
    "attention": {"heads": 32, "seq_q": 1024, "seq_kv": 1024, "head_dim": 64},
}
EXAMPLE_TARGETS = {"c": cc.cpu_target, "cuda": lambda: cc.cuda_target("sm_90")}


def _example_workload(opdef) -> cc.Workload:
    """EXAMPLE_PARAMS of the op, else every int param at 256 clamped to its range (string params: defaults)."""
    params = EXAMPLE_PARAMS.get(opdef.name)
    if params is None:
        params = {p.name: min(max(256, p.lo), p.hi) for p in opdef.params if p.kind == "int" and p.default is None}
    return cc.make_workload(opdef.name, params)


def _space(workload: cc.Workload, target: cc.Target) -> dict[str, Any]:
    try:
        return {"target": target.arch, **cc.get_space(workload, target).describe()}
    except (cc.WorkloadError, cc.ConfigError, ValueError) as exc:
        return {"target": target.arch, "error": str(exc)}


@functools.cache
def ops_catalogue() -> tuple[s.OpPublic, ...]:
    """Computed once per process: the op registry and templates do not change while it runs."""
    out = []
    for name in sorted(cc.OPS):
        opdef = cc.get_op(name)
        described = opdef.describe()
        dtypes = next((p.choices for p in opdef.params if p.name == "dtype"), ())
        workload = _example_workload(opdef)
        spaces = {kind: _space(workload, make()) for kind, make in EXAMPLE_TARGETS.items()}
        out.append(s.OpPublic(name=name, doc=described["doc"], params=described["params"], dtypes=list(dtypes),
                              example_workload=workload.key, spaces=spaces))
    return tuple(out)


@router.get("/ops", response_model=s.OpsPage, responses=documented(401, 422))
def list_ops(_: ReadAccess, settings: SettingsDep, limit: Limit = 100, offset: Offset = 0) -> s.OpsPage:
    """Each op's params with their bounds, dtypes and an example of its spaces; the search strategies; and
    `limits`: the bounds every workload and job meets beyond each param's own (the largest tensor, in elements,
    is the smaller of the compiler's and this server's)."""
    ops = ops_catalogue()
    limits = s.OpsLimits(max_tensor_elements=min(MAX_TENSOR_ELEMS, settings.max_tensor_elements),
                         max_dim=settings.max_dim, max_trials_per_job=settings.max_trials_per_job)
    return s.OpsPage(items=list(ops[offset:offset + limit]), total=len(ops), limit=limit, offset=offset,
                     strategies=describe_strategies(), limits=limits)
