"""Assembles the tuner's gRPC server: AgentService plus the standard grpc.health.v1 service, plaintext or TLS, with
requests that are not valid protobuf answered INVALID_ARGUMENT (undecodable.py)."""
from __future__ import annotations

from concurrent import futures
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from sqlalchemy.orm import Session, sessionmaker

from tunefarm_proto import tunefarm_pb2, tunefarm_pb2_grpc
from tuner_server.rpc.servicer import AgentServicer
from tuner_server.rpc.undecodable import RejectUndecodable

SERVICE_NAME = tunefarm_pb2.DESCRIPTOR.services_by_name["AgentService"].full_name  # 'tunefarm.v1.AgentService'
MAX_WORKERS = 16
MAX_SEND_BYTES = 64 << 20


def server_credentials(settings) -> grpc.ServerCredentials | None:
    """TLS credentials from the settings' certificate and key files; None (plaintext) when neither is set."""
    cert = getattr(settings, "grpc_tls_cert_file", None)
    key = getattr(settings, "grpc_tls_key_file", None)
    if not cert and not key:
        return None
    if not cert or not key:
        raise ValueError("gRPC TLS needs both grpc_tls_cert_file and grpc_tls_key_file (TUNEFARM_GRPC_TLS_*)")
    return grpc.ssl_server_credentials([(Path(key).read_bytes(), Path(cert).read_bytes())])


def listen_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


def build_grpc_server(settings, session_factory: sessionmaker[Session], driver=None) -> grpc.Server:
    """A bound, not yet started server on settings.grpc_host:grpc_port. The port it got (useful with port 0) is
    `server.bound_port`; `server.health` is its HealthServicer (`stop_grpc_server` sets it NOT_SERVING)."""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=MAX_WORKERS, thread_name_prefix="tunefarm-grpc"),
        options=[("grpc.max_receive_message_length", settings.max_request_bytes),
                 ("grpc.max_send_message_length", MAX_SEND_BYTES)],
        interceptors=[RejectUndecodable()],  # a request that does not parse: INVALID_ARGUMENT, not INTERNAL
    )
    tunefarm_pb2_grpc.add_AgentServiceServicer_to_server(AgentServicer(settings, session_factory, driver), server)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for service in ("", SERVICE_NAME):
        health_servicer.set(service, health_pb2.HealthCheckResponse.SERVING)
    address = listen_address(settings.grpc_host, settings.grpc_port)
    credentials = server_credentials(settings)
    port = server.add_secure_port(address, credentials) if credentials else server.add_insecure_port(address)
    if not port:
        raise RuntimeError(f"could not listen for gRPC on {address}")
    server.bound_port = port
    server.health = health_servicer
    return server


def stop_grpc_server(server: grpc.Server, grace_s: float = 5.0) -> None:
    """Report NOT_SERVING, let calls in flight finish for up to `grace_s`, then stop."""
    health_servicer = getattr(server, "health", None)
    if health_servicer is not None:
        health_servicer.enter_graceful_shutdown()
    server.stop(grace_s).wait()
