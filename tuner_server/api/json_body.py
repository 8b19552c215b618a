"""Request bodies are read as strict JSON (tuner_server.strict_json): NaN, Infinity, 1e999 and "\\u0000" are a 400.

Every router is built with `route_class=StrictJSONRoute`, so FastAPI parses bodies with strict_json.loads.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

from tuner_server.strict_json import NonFiniteNumber, NulCharacter, loads


class StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            try:
                self._json = loads(body)
            except (NonFiniteNumber, NulCharacter) as exc:  # FastAPI answers a JSONDecodeError with a 400
                raise json.JSONDecodeError(str(exc), body.decode("utf-8", "replace"), 0) from exc
        return self._json


class StrictJSONRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            return await handler(StrictJSONRequest(request.scope, request.receive))

        return strict_handler
