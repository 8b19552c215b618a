"""tuner_server: the farm's REST + gRPC server, search strategies, cost model and versioned database."""
