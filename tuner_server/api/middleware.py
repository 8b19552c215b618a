"""ASGI middleware: a request-body size limit (413), HEAD served as GET without the body, and request latency for
/metrics."""
from __future__ import annotations

import json
import time
from collections.abc import Callable

from fastapi import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyTooLarge(HTTPException):
    """Raised while reading a body past the limit; an HTTPException so FastAPI's body parsing passes it on."""

    def __init__(self, size: int, limit: int):
        super().__init__(413, f"request body too large: {size} bytes or more; the limit is {limit}")
        self.extra_detail = {"max_request_bytes": limit}


def _error(status: int, error: str, detail) -> tuple[dict, dict]:
    body = json.dumps({"error": error, "detail": detail}).encode()
    start = {"type": "http.response.start", "status": status,
             "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                         (b"connection", b"close")]}
    return start, {"type": "http.response.body", "body": body}


class BodySizeLimit:
    """Refuse request bodies over `max_bytes` with 413: by Content-Length up front, or while a chunked body
    streams in (the route never sees a partial body: reading it raises before the limit is passed)."""

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(send, int(declared))
            return
        seen, started = 0, False

        async def counted_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise BodyTooLarge(seen, self.max_bytes)
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except BodyTooLarge:
            if started:
                raise
            await self._refuse(send, seen)

    async def _refuse(self, send: Send, size: int) -> None:
        start, body = _error(413, BodyTooLarge(size, self.max_bytes).detail, {"max_request_bytes": self.max_bytes})
        await send(start)
        await send(body)


class HeadAsGet:
    """HEAD wherever GET is served (RFC 9110 section 9.3.2): the request goes on as a GET, and its answer is sent with
    the same status and headers (Content-Length included) but no body. Where GET is not served it is the GET's
    405, whose Allow lists the methods that are."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        ended = False

        async def without_body(message: Message) -> None:
            nonlocal ended
            if message["type"] == "http.response.body":
                if ended:  # the rest of a streamed body: dropped
                    return
                message, ended = {"type": "http.response.body", "body": b"", "more_body": False}, True
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, without_body)


class RequestTimer:
    """Calls `observe(method, route, status, seconds)` after every HTTP request; `route` is the path template
    (e.g. '/v1/jobs/{job_id}'), so label values stay bounded."""

    def __init__(self, app: ASGIApp, observe: Callable[[str, str, int, float], None]):
        self.app, self.observe = app, observe

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500
        begin = time.perf_counter()

        async def tracked_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, tracked_send)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None) or "(unmatched)"
            self.observe(scope["method"], template, status, time.perf_counter() - begin)
