"""schemathesis (`run --checks all`) against a live tuner process, on SQLite and PostgreSQL: every operation of the
OpenAPI, in every phase (examples, coverage, fuzzing, stateful), with bounded examples and a fixed seed, over a
database seeded with a finished job and its schedule history. The run must find nothing: no 5xx, every status and
body as documented, schema-valid requests accepted and invalid ones refused (the few documented exceptions and
their reasons are in schemathesis.toml beside this file)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.cpu.rest_support import seed
from tests.farm.conftest import create_pg_database
from tuner_server.db import make_engine, make_session_factory, upgrade_to_head

HERE = Path(__file__).resolve().parent
SEED = 20261125
MAX_EXAMPLES = 12  # per operation in the fuzzing phase (coverage's boundary cases come on top): ~25 s a backend
RUN_TIMEOUT_S = 300


def _seeded_database(backend: str, request, root: Path) -> str:
    url = (create_pg_database(request.getfixturevalue("pg_cluster"), "tf_fuzz") if backend == "postgres"
           else f"sqlite:///{root / 'tunefarm.db'}")
    upgrade_to_head(url)
    engine = make_engine(url)
    try:
        seed(make_session_factory(engine))
    finally:
        engine.dispose()
    return url


def test_schemathesis_checks_all_find_nothing(farm, backend, request, tmp_path):
    url = _seeded_database(backend, request, tmp_path)
    # The fuzzer submits jobs: small budgets and no feature-pool process keep the driver's share of two cores small.
    live = farm(agents=0, backend=backend, database_url=url,
                env={"TUNEFARM_MAX_TRIALS_PER_JOB": "64", "TUNEFARM_FEATURE_WORKERS": "0"})
    cmd = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(HERE / "schemathesis.toml"), "run",
           f"{live.url}/openapi.json", "--checks", "all", "--exclude-checks", "use_after_free",  # see the .toml
           "--header", f"Authorization: Bearer {live.admin_token}",
           "--seed", str(SEED), "--max-examples", str(MAX_EXAMPLES), "--workers", "2",
           "--generation-database", "none", "--no-color", "--output-truncate", "false"]
    env = {**os.environ, "SCHEMATHESIS_HOOKS": str(HERE / "schemathesis_hooks.py")}
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    summary = done.stdout[-6000:] + done.stderr[-2000:]
    assert done.returncode == 0, f"schemathesis found failures:\n{summary}\n--- tuner log ---\n{live.server.tail()}"
    ran = re.search(r"(\d+) generated, \1 passed", summary)
    assert ran and int(ran.group(1)) > 1000, summary  # thousands of requests, each one passed
    assert "Traceback" not in live.server.tail(200_000), live.server.tail()  # no 500 hidden behind a 4xx
