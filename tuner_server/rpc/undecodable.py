"""Requests that are not valid protobuf answered INVALID_ARGUMENT, not INTERNAL.

grpc deserializes a request before any servicer runs, and a DecodeError there (a string field holding invalid
UTF-8, such as an encoded lone surrogate, or bytes that are no message at all) leaves as INTERNAL "Exception
deserializing request!" with a traceback in the log. This interceptor gives every unary-request method a
deserializer that returns an `Undecodable` marker instead of raising, and a behaviour that answers the marker with
INVALID_ARGUMENT naming the message type and what is allowed; the generated stubs and the servicers are untouched.
"""
from __future__ import annotations

from dataclasses import dataclass

import grpc
from google.protobuf.message import DecodeError

from tuner_server import metrics


@dataclass(frozen=True)
class Undecodable:
    """A request whose bytes did not parse: what the deserializer said."""

    problem: str


def _deserializer(parse):
    def deserialize(data: bytes):
        try:
            return parse(data)
        except DecodeError as exc:
            return Undecodable(str(exc))

    return deserialize


def _behaviour(behaviour, method: str):
    short = method.rsplit("/", 1)[-1]

    def answer(request, context):
        if not isinstance(request, Undecodable):
            return behaviour(request, context)
        with metrics.observe_grpc(short) as outcome:
            outcome["code"] = grpc.StatusCode.INVALID_ARGUMENT.name
        context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                      f"request: not a valid message for {method} ({request.problem}): a request is protobuf wire "
                      "format whose string fields are valid UTF-8 (no encoded surrogates, no bytes such as 0xff)")

    return answer


class RejectUndecodable(grpc.ServerInterceptor):
    """Wraps the unary-request handlers the server finds (see the module's doc); others pass as they are."""

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if handler is None or handler.request_streaming or handler.request_deserializer is None:
            return handler
        method = handler_call_details.method
        kind = "unary_stream" if handler.response_streaming else "unary_unary"
        return handler._replace(request_deserializer=_deserializer(handler.request_deserializer),
                                **{kind: _behaviour(getattr(handler, kind), method)})
