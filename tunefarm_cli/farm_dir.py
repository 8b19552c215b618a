"""Where the embedded farm lives, and whether it runs.

The data directory is --data-dir, else $TUNEFARM_DATA_DIR, else the nearest `.tunefarm` in the current directory
or a parent (as git finds its repository; $TUNEFARM_CEILING_DIRECTORIES, colon-separated absolute paths, are never
walked up into, as GIT_CEILING_DIRECTORIES), else `./.tunefarm`. A farm runs there while its `tunefarm up` holds
the flock on DATA_DIR/farm.lock (the kernel drops it when that process dies, even by kill -9), so a farm.json
left by a farm that died is recognised as stale.
"""
from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

DATA_DIR_NAME = ".tunefarm"
FARM_FILE = "farm.json"
LOCK_FILE = "farm.lock"


def find_data_dir(given: Path | None, env_value: str | None, cwd: Path | None = None, ceilings: str | None = None
                  ) -> Path:
    """--data-dir, else $TUNEFARM_DATA_DIR, else the nearest existing .tunefarm upwards, else ./.tunefarm.

    `ceilings` ($TUNEFARM_CEILING_DIRECTORIES) stops the walk: a listed directory and all above it are not searched
    (the current directory always is); relative entries are ignored, as git ignores them."""
    if given is not None:
        return given
    if env_value:
        return Path(env_value)
    here = (cwd or Path.cwd()).resolve()
    stops = {Path(entry).resolve() for entry in (ceilings or "").split(":") if Path(entry).is_absolute()}
    for folder in (here, *here.parents):
        if folder != here and folder in stops:
            break
        if (folder / DATA_DIR_NAME).is_dir():
            return folder / DATA_DIR_NAME
    return here / DATA_DIR_NAME


def farm_running(data_dir: Path) -> bool:
    """Whether a `tunefarm up` (or an EmbeddedFarm) holds the data directory's lock now."""
    try:
        fd = os.open(data_dir / LOCK_FILE, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # also releases the probe's shared lock
    return False


def running_farm(data_dir: Path) -> dict | None:
    """{"url", "token"} of the farm running on data_dir; None when none runs (a stale farm.json is ignored)."""
    path = data_dir / FARM_FILE
    if not path.exists() or not farm_running(data_dir):
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
