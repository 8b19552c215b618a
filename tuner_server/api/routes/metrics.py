"""GET /metrics: the process's Prometheus collectors in the text exposition format (read scope)."""
from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from tuner_server.api.deps import ReadAccess
from tuner_server.api.errors import documented
from tuner_server.api.json_body import StrictJSONRoute

router = APIRouter(tags=["metrics"], route_class=StrictJSONRoute)


@router.get("/metrics", response_class=Response,
            responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}, **documented(401)})
def metrics(request: Request, _: ReadAccess) -> Response:
    return Response(generate_latest(request.app.state.metrics_registry), media_type=CONTENT_TYPE_LATEST)
