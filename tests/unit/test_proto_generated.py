"""The committed tunefarm_proto/ code is what proto/tunefarm.proto generates (fails when it is stale)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.file_modules import module_from_file

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(importlib.util.find_spec("grpc_tools") is None, reason="grpcio-tools not installed")
def test_generated_code_is_up_to_date(tmp_path):
    generate = module_from_file("generate", ROOT / "proto" / "generate.py")
    fresh = generate.generate(tmp_path)
    assert fresh, "protoc generated nothing"
    for path in fresh:
        committed = ROOT / "tunefarm_proto" / path.name
        assert committed.exists(), f"{committed} missing: run python3 proto/generate.py"
        assert committed.read_text() == path.read_text(), f"{committed.name} is stale: run python3 proto/generate.py"


def test_package_is_versioned():
    from tunefarm_proto import tunefarm_pb2

    assert tunefarm_pb2.DESCRIPTOR.package == "tunefarm.v1"
    assert "AgentService" in tunefarm_pb2.DESCRIPTOR.services_by_name
