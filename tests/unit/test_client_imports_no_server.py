"""The client library, the kernel loader and the CLI's commands import without the tuner's cost model, database
or servers: a user's process that fetches and runs a kernel pays for none of them (lightgbm and scipy alone took
a CLI command 1.2 s to import), and an install without them works."""
from __future__ import annotations

import subprocess
import sys
import textwrap

SERVER_ONLY = ("lightgbm", "scipy", "sqlalchemy", "alembic", "grpc", "fastapi", "uvicorn", "tuner_server.predict")


def test_client_loader_and_cli_commands_import_no_server_module():
    code = textwrap.dedent(f"""
        import sys
        import tunefarm_client, tunefarm_client.loader, tunefarm_cli.commands  # noqa: F401, E401
        print(" ".join(m for m in {SERVER_ONLY!r} if m in sys.modules))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [], f"imported by the client: {done.stdout.strip()}"
