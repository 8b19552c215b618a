"""GET /v1/agents: every agent with its device class, state, last heartbeat and the tasks it holds now;
GET /v1/whoami: the scope of the caller's token (the dashboard shows admin controls only to admins)."""
from __future__ import annotations

from typing import Literal

from fastapi import APIRouter

from tuner_server import repo
from tuner_server.api import schemas as s
from tuner_server.api.deps import Limit, Offset, ReadAccess, SessionDep
from tuner_server.api.errors import documented
from tuner_server.api.json_body import StrictJSONRoute
from tuner_server.api.views import agent_leases_public

router = APIRouter(prefix="/v1", tags=["agents"], route_class=StrictJSONRoute)
ERRORS = documented(401, 422)


@router.get("/agents", response_model=s.Page[s.AgentLeasesPublic], responses=ERRORS)
def list_agents(session: SessionDep, _: ReadAccess, status: Literal["active", "lost", "gone"] | None = None,
                limit: Limit = 100, offset: Offset = 0) -> s.Page[s.AgentLeasesPublic]:
    """Oldest registration first; `status` filters (active, lost, or gone: replaced by a re-registration)."""
    agents = repo.list_agents(session=session, status=status)
    page = agents[offset:offset + limit]
    leases = repo.leases_by_agent([a.id for a in page], session=session)
    return s.Page[s.AgentLeasesPublic](items=[agent_leases_public(a, leases[a.id]) for a in page],
                                       total=len(agents), limit=limit, offset=offset)


@router.get("/whoami", response_model=s.WhoAmI, responses=documented(401))
def whoami(principal: ReadAccess) -> s.WhoAmI:
    return s.WhoAmI(scope=principal.scope)
