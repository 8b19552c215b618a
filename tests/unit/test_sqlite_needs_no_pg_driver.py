"""An embedded SQLite farm needs no PostgreSQL driver: the tuner's modules import, and an SQLite tuner leads with
its driver and keeper, without psycopg (the GPU machine and minimal installs have none; only the election over
PostgreSQL uses it)."""
from __future__ import annotations

import subprocess
import sys
import textwrap


def test_sqlite_tuner_leads_without_psycopg(tmp_path):
    code = textwrap.dedent(f"""
        import sys
        sys.modules["psycopg"] = None  # importing it now raises ImportError
        import tuner_server.main  # noqa: F401 - everything the tuner process imports
        from tuner_server.db import make_engine, make_session_factory
        from tuner_server.db.migrate import upgrade_to_head
        from tuner_server.leadership import LeaderDuties, elect
        from tuner_server.settings import Settings

        url = "sqlite:///{tmp_path}/farm.db"
        upgrade_to_head(url)
        engine = make_engine(url)
        settings = Settings(database_url=url)
        leadership = elect(settings, engine, make_session_factory(engine), lambda s: LeaderDuties(settings, s))
        leadership.start()
        try:
            print(leadership.role)
        finally:
            leadership.stop()
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["leader"]
