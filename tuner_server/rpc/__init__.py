"""The tuner's gRPC edge: AgentService (servicer), protobuf conversion (convert) and server assembly (server)."""
from tuner_server.rpc.server import build_grpc_server, stop_grpc_server

__all__ = ["build_grpc_server", "stop_grpc_server"]
