"""The agent's own grpc.health.v1 endpoint, so orchestrators can probe agents as they probe the tuner."""
from __future__ import annotations

from concurrent import futures

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

SERVICE = "tunefarm.v1.DeviceAgent"


class HealthEndpoint:
    """SERVING while the agent runs; NOT_SERVING once it shuts down."""

    def __init__(self, port: int, host: str = "0.0.0.0") -> None:
        self._servicer = health.HealthServicer()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        health_pb2_grpc.add_HealthServicer_to_server(self._servicer, self._server)
        self.port = self._server.add_insecure_port(f"{host}:{port}")
        if self.port == 0:
            raise OSError(f"cannot listen for health checks on {host}:{port}")

    def start(self) -> HealthEndpoint:
        self._server.start()
        self.set(True)
        return self

    def set(self, serving: bool) -> None:
        status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        for name in ("", SERVICE):
            self._servicer.set(name, status)

    def stop(self) -> None:
        self.set(False)
        self._server.stop(grace=1.0)
