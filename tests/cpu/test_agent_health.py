"""The agent's grpc.health.v1 endpoint answers SERVING while it runs and NOT_SERVING once stopped."""
from __future__ import annotations

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from device_agent.health import SERVICE, HealthEndpoint


def _status(port: int, service: str) -> int:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        return stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status


def test_health_endpoint_reports_serving_then_not_serving():
    endpoint = HealthEndpoint(0, host="127.0.0.1").start()
    try:
        assert _status(endpoint.port, "") == health_pb2.HealthCheckResponse.SERVING
        assert _status(endpoint.port, SERVICE) == health_pb2.HealthCheckResponse.SERVING
        endpoint.set(False)
        assert _status(endpoint.port, SERVICE) == health_pb2.HealthCheckResponse.NOT_SERVING
    finally:
        endpoint.stop()
