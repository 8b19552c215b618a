"""Finding the embedded farm: --data-dir, $TUNEFARM_DATA_DIR, the nearest .tunefarm upwards; a farm.json whose
`tunefarm up` died (its flock gone) is stale. And --device cpu|cuda resolution against a farm's device classes."""
from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

import httpx
import pytest

from tunefarm_cli.farm_dir import find_data_dir, running_farm
from tunefarm_client.client import TunefarmClient, TunefarmError


def test_data_dir_precedence(tmp_path):
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    # the ceiling keeps a .tunefarm the host may hold above the test's directory (say /tmp/.tunefarm) out of it
    above = str(tmp_path.parent)
    assert find_data_dir(None, None, nested, above) == nested / ".tunefarm"  # none yet: here
    (tmp_path / ".tunefarm").mkdir()
    assert find_data_dir(None, None, nested, above) == tmp_path / ".tunefarm"  # the nearest one upwards
    assert find_data_dir(None, None, nested) == tmp_path / ".tunefarm"  # no ceiling: the same nearest one
    assert find_data_dir(None, "/env/dir", nested) == Path("/env/dir")
    assert find_data_dir(tmp_path / "given", "/env/dir", nested) == tmp_path / "given"


def test_ceiling_directories_stop_the_walk(tmp_path):
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    (tmp_path / ".tunefarm").mkdir()
    assert find_data_dir(None, None, nested, str(tmp_path / "a")) == nested / ".tunefarm"  # a is not walked into
    assert find_data_dir(None, None, nested, f"relative/dir::{tmp_path / 'a'}") == nested / ".tunefarm"
    assert find_data_dir(None, None, nested, "relative/dir") == tmp_path / ".tunefarm"  # relative: ignored
    assert find_data_dir(None, None, nested, str(tmp_path / "elsewhere")) == tmp_path / ".tunefarm"
    (nested / ".tunefarm").mkdir()
    assert find_data_dir(None, None, nested, str(nested)) == nested / ".tunefarm"  # the current one always counts


def test_a_farm_file_counts_only_while_its_lock_is_held(tmp_path):
    (tmp_path / "farm.json").write_text(json.dumps({"url": "http://127.0.0.1:1", "token": "t"}))
    assert running_farm(tmp_path) is None  # no lock file: stale
    fd = os.open(tmp_path / "farm.lock", os.O_RDWR | os.O_CREAT)
    assert running_farm(tmp_path) is None  # a lock file nobody holds: stale
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        assert running_farm(tmp_path) == {"url": "http://127.0.0.1:1", "token": "t"}
    finally:
        os.close(fd)
    assert running_farm(tmp_path) is None


def _client(classes: list[tuple[str, str]]) -> TunefarmClient:
    """A client whose farm has these (device class, status) pairs."""
    def answer(request: httpx.Request) -> httpx.Response:
        kind = request.url.params.get("kind")
        items = [{"device_class": c, "kind": c.split("-")[0], "status": status,
                  "active_agents": int(status == "online"), "agents": [], "fingerprint": {},
                  "first_seen": "2026-01-01T00:00:00Z"}
                 for c, status in classes if kind is None or c.startswith(kind)]
        return httpx.Response(200, json={"items": items, "total": len(items), "limit": 1000, "offset": 0})

    return TunefarmClient("http://farm", "t", http=httpx.Client(transport=httpx.MockTransport(answer)))


def test_device_kind_resolves_to_the_farms_class():
    assert _client([]).resolve_device("cpu-x86_64-avx2-2c") == "cpu-x86_64-avx2-2c"  # exact: as is
    assert _client([("cpu-x86_64-avx2-2c", "offline")]).resolve_device("cpu") == "cpu-x86_64-avx2-2c"
    two = [("cpu-x86_64-avx2-2c", "offline"), ("cpu-x86_64-avx512f-4c", "online"), ("cuda-h100-sm90", "online")]
    assert _client(two).resolve_device("cpu") == "cpu-x86_64-avx512f-4c"  # the only one online
    assert _client(two).resolve_device("cuda") == "cuda-h100-sm90"
    with pytest.raises(TunefarmError, match="no cuda device class on this farm yet"):
        _client(two[:2]).resolve_device("cuda")
    both = [("cpu-x86_64-avx2-2c", "online"), ("cpu-x86_64-avx2-1c", "online")]
    with pytest.raises(TunefarmError, match=r"'cpu' is ambiguous .*cpu-x86_64-avx2-2c \(online\), "
                                            r"cpu-x86_64-avx2-1c \(online\)"):
        _client(both).resolve_device("cpu")
