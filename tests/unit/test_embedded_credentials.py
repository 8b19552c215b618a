"""The embedded farm's tokens are usable verbatim as `--token VALUE` on a command line."""
from __future__ import annotations

import json

from tunefarm_cli.embedded import EmbeddedFarm


def test_new_tokens_never_read_as_an_option(tmp_path):
    for n in range(200):  # a bare token_urlsafe begins with "-" one time in 64
        farm = EmbeddedFarm(data_dir=tmp_path / str(n))
        farm.data_dir.mkdir()
        creds = farm._credentials()
        assert set(creds) == {"admin_token", "enrolment_token"}
        assert not any(token.startswith("-") for token in creds.values()), creds
        assert farm._credentials() == creds  # kept across restarts


def test_a_stored_token_that_reads_as_an_option_is_replaced(tmp_path):
    (tmp_path / "credentials.json").write_text(json.dumps({"admin_token": "-RFzD1", "enrolment_token": "abc"}))
    creds = EmbeddedFarm(data_dir=tmp_path)._credentials()
    assert not creds["admin_token"].startswith("-") and creds["enrolment_token"] != "abc"
    assert json.loads((tmp_path / "credentials.json").read_text()) == creds
