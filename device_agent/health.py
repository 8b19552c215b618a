"""The agent's own grpc.health.v1 endpoint, so orchestrators can probe agents as they probe the tuner."""
from __future__ import annotations

import os
import sys
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
        try:
            self.port = self._server.add_insecure_port(f"{host}:{port}")
        except RuntimeError:  # grpcio raises this when the port is taken
            self.port = 0
        if self.port == 0:
            raise OSError(f"cannot listen for health checks on {host}:{port} (in use?)")

    def start(self, serving: bool = True) -> HealthEndpoint:
        self._server.start()
        self.set(serving)
        return self

    def set(self, serving: bool) -> None:
        status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        for name in ("", SERVICE):
            self._servicer.set(name, status)

    def stop(self) -> None:
        self.set(False)
        self._server.stop(grace=1.0)


def probe(port: int, host: str = "127.0.0.1", timeout_s: float = 3.0) -> bool:
    """Whether the agent health endpoint on host:port answers SERVING."""
    with grpc.insecure_channel(f"{host}:{port}") as channel:
        try:
            response = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=SERVICE),
                                                                 timeout=timeout_s)
        except grpc.RpcError:
            return False
    return response.status == health_pb2.HealthCheckResponse.SERVING


def main(argv: list[str] | None = None) -> int:
    """`python -m device_agent.health [PORT]` (default $TUNEFARM_HEALTH_PORT): exit 0 when SERVING, else 1 (the
    compose and Dockerfile healthcheck of the agents)."""
    args = sys.argv[1:] if argv is None else argv
    port = args[0] if args else os.environ.get("TUNEFARM_HEALTH_PORT", "")
    if not port.isdigit():
        print("usage: python -m device_agent.health PORT (or set TUNEFARM_HEALTH_PORT)", file=sys.stderr)
        return 2
    serving = probe(int(port))
    print("SERVING" if serving else "not serving")
    return 0 if serving else 1


if __name__ == "__main__":
    raise SystemExit(main())
