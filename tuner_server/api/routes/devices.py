"""GET /v1/devices: device classes the farm has seen, their agents and whether any is online."""
from __future__ import annotations

from collections import defaultdict
from typing import Literal

from fastapi import APIRouter

from tuner_server import repo
from tuner_server.api import schemas as s
from tuner_server.api.deps import Limit, Offset, ReadAccess, SessionDep
from tuner_server.api.errors import documented
from tuner_server.api.json_body import StrictJSONRoute
from tuner_server.api.views import device_public

router = APIRouter(prefix="/v1", tags=["devices"], route_class=StrictJSONRoute)


@router.get("/devices", response_model=s.Page[s.DevicePublic], responses=documented(401, 422))
def list_devices(session: SessionDep, _: ReadAccess, kind: Literal["cpu", "cuda"] | None = None,
                 limit: Limit = 100, offset: Offset = 0) -> s.Page[s.DevicePublic]:
    """Device classes (agents that were replaced by a re-registration are left out)."""
    devices = [d for d in repo.list_devices(session=session) if kind is None or d.kind == kind]
    agents = defaultdict(list)
    for agent in repo.list_agents(session=session):
        if agent.status != "gone":
            agents[agent.device_class].append(agent)
    page = devices[offset:offset + limit]
    return s.Page[s.DevicePublic](items=[device_public(d, agents[d.device_class]) for d in page],
                                  total=len(devices), limit=limit, offset=offset)
