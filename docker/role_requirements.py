"""Print the requirements of one or more roles (optional-dependency groups of pyproject.toml), one a line.

The images install their role's packages first (a cached layer), then tunefarm itself with --no-deps:
    python docker/role_requirements.py agent gpu > /tmp/requirements.txt && pip install -r /tmp/requirements.txt
so an agent image has no web stack while `pip install .` still installs every role (pyproject.toml).
"""
from __future__ import annotations

import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def role_requirements(roles: list[str], pyproject: Path = PYPROJECT) -> list[str]:
    extras = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    unknown = [role for role in roles if role not in extras]
    if unknown:
        raise SystemExit(f"role_requirements: no extra {', '.join(unknown)} in {pyproject} (have {', '.join(extras)})")
    return list(dict.fromkeys(req for role in roles for req in extras[role]))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit("usage: python docker/role_requirements.py ROLE [ROLE ...]")
    print("\n".join(role_requirements(sys.argv[1:])))
