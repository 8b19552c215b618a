"""Running an image's entry point as a local process, as close to the container as a test without an engine gets.

- `dockerfile_spec(name)`: what docker/<name> sets for its processes (ENV, USER, WORKDIR, CMD, HEALTHCHECK).
- `ImageUser`: runs commands as the image's non-root user: as root, `setpriv` to `nobody` in a private mount
  namespace where the directories on the way to the interpreter and the repository that `nobody` cannot enter
  (e.g. a pyenv under /root) are bind-mounted into traversable shadows; as another user, as that user. The working
  directory is a stand-in for WORKDIR that the user cannot write, as /app in the images.
- `role_blocker(...)`: a sitecustomize that makes the modules an image does not install unimportable, so a process
  that needs one fails as it would in the image (the agent images carry only the `agent` role).
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import sys
import tomllib
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

from tests.farm.farm_support import REPO

NOBODY = 65534


@dataclass
class DockerfileSpec:
    env: dict[str, str] = field(default_factory=dict)
    user: str = "root"
    workdir: str = "/"
    cmd: list[str] = field(default_factory=list)
    healthcheck: list[str] = field(default_factory=list)  # exec-form CMD of HEALTHCHECK
    base: str = ""


def dockerfile_spec(name: str) -> DockerfileSpec:
    """The instructions of docker/<name> that shape its processes (exec-form CMD and HEALTHCHECK only)."""
    text = re.sub(r"\\\n\s*", " ", (REPO / "docker" / name).read_text())
    spec = DockerfileSpec()
    for line in text.splitlines():
        word, _, rest = line.strip().partition(" ")
        rest = rest.strip()
        if word == "FROM":
            spec.base = rest.split()[0]
        elif word == "ENV":
            for part in shlex.split(rest):
                key, _, value = part.partition("=")
                spec.env[key] = re.sub(r"\$(\w+)", lambda m: spec.env.get(m[1], os.environ.get(m[1], "")), value)
        elif word == "USER":
            spec.user = rest
        elif word == "WORKDIR":
            spec.workdir = rest
        elif word == "CMD":
            spec.cmd = json.loads(rest)
        elif word == "HEALTHCHECK":
            spec.healthcheck = json.loads(rest[rest.index(" CMD ") + 5:])
    return spec


def _blocking_dirs(paths: list[Path]) -> dict[Path, str]:
    """Directories on the way to `paths` that others cannot enter -> the child on the way."""
    blocked: dict[Path, str] = {}
    for path in paths:
        for parent in reversed(path.resolve().parents):
            if not parent.stat().st_mode & stat.S_IXOTH:
                child = path.resolve().relative_to(parent).parts[0]
                blocked[parent] = child
                break
    return blocked


def _bind(source: Path, target: Path, how: str = "--bind") -> str:
    return f"mount {how} {shlex.quote(str(source))} {shlex.quote(str(target))}"


class ImageUser:
    """Runs commands as an image's non-root user, from a stand-in for its WORKDIR (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.as_root = os.geteuid() == 0
        self.uid = NOBODY if self.as_root else os.geteuid()
        self.gid = NOBODY if self.as_root else os.getegid()
        self.workdir = root / "app"
        self.workdir.mkdir()
        self.workdir.chmod(0o555)
        self._mounts: list[str] = []
        if self.as_root:
            for i, (directory, child) in enumerate(_blocking_dirs([Path(sys.executable), Path(sys.prefix), REPO])
                                                   .items()):
                shadow = root / "shadows" / str(i)
                (shadow / child).mkdir(parents=True)
                for d in (shadow.parent, shadow):
                    d.chmod(0o711)
                self._mounts += [_bind(directory / child, shadow / child), _bind(shadow, directory, "--rbind")]

    def usable(self) -> bool:
        return not self.as_root or (shutil.which("setpriv") is not None and shutil.which("unshare") is not None)

    def own(self, path: Path, mode: int = 0o755) -> Path:
        """A directory (made if needed) or file that belongs to the user, as a volume the image prepared."""
        if not path.exists():
            path.mkdir(parents=True)
        path.chmod(mode if path.is_dir() else 0o600)
        if self.as_root:
            os.chown(path, self.uid, self.gid)
        return path

    def command(self, cmd: list[str], hostname: str | None = None) -> list[str]:
        """`cmd` run as the user from the workdir; with `hostname` (root only), in its own UTS namespace."""
        steps = list(self._mounts)
        if hostname:
            steps.append(f"hostname {shlex.quote(hostname)}")
        steps.append(f"cd {shlex.quote(str(self.workdir))}")
        if self.as_root:
            steps.append(f'exec setpriv --reuid {self.uid} --regid {self.gid} --clear-groups "$@"')
            unshare = ["unshare", "--mount", *(["--uts"] if hostname else [])]
            return [*unshare, "sh", "-c", " && ".join(steps), "image-user", *cmd]
        steps.append('exec "$@"')
        return ["sh", "-c", " && ".join(steps), "image-user", *cmd]


def _closure(requirements: list[str]) -> set[str]:
    """Installed distributions (normalised names) these requirements pull in, transitively."""
    seen: set[str] = set()
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        if name in seen or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
            continue
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        extras = req.extras
        for sub in dist.requires or []:
            sub_req = Requirement(sub)
            if sub_req.marker is None or any(sub_req.marker.evaluate({"extra": e}) for e in extras or {""}):
                todo.append(Requirement(str(sub_req).split(";")[0]))
    return seen


def role_modules_missing(role: str) -> set[str]:
    """Top-level modules that `pip install .` brings and an image of `role` (pyproject's extra) does not."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extra = _closure(project["optional-dependencies"][role])
    missing = _closure(project["dependencies"]) - extra
    modules = set()
    for module, dists in metadata.packages_distributions().items():
        names = {re.sub(r"[-_.]+", "-", d).lower() for d in dists}
        if names & missing and not names & extra and not module.startswith("_"):
            modules.add(module)
    return modules


SITECUSTOMIZE = '''\
import sys

BLOCKED = frozenset({blocked!r})


class _NotInThisImage:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (not installed in this image)", name=name)
        return None


sys.meta_path.insert(0, _NotInThisImage)
'''


def role_blocker(directory: Path, blocked: set[str]) -> Path:
    """A directory holding a sitecustomize.py that blocks `blocked`; put it first on PYTHONPATH."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "sitecustomize.py").write_text(SITECUSTOMIZE.format(blocked=sorted(blocked)))
    return directory
