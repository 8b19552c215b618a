"""Generated gRPC/protobuf code for proto/tunefarm.proto (package tunefarm.v1); regenerate with proto/generate.py."""
