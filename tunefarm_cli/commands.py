"""What every client sub-command shares: the consoles, the one-line user error, and the connection to a farm."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from rich.console import Console

from tunefarm_cli.farm_dir import FARM_FILE, running_farm
from tunefarm_client.client import DEVICE_KINDS, TunefarmClient

console = Console()


class CliError(Exception):
    """A user mistake: main prints `tunefarm COMMAND: <message>` on stderr, one line, and exits 1."""


def warn(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def connect(server: str | None, token: str | None, data_dir: Path) -> TunefarmClient:
    """--server/--token, else the farm `tunefarm up` runs on data_dir."""
    if server is None:
        farm = running_farm(data_dir)
        if farm is None:
            if (data_dir / FARM_FILE).exists():
                raise CliError(f"the `tunefarm up` farm of {data_dir} is not running (it stopped or was killed): "
                               "start it again with `tunefarm up`")
            raise CliError(f"no --server given and no running `tunefarm up` farm in {data_dir}: start one with "
                           "`tunefarm up`, or pass --server URL --token TOKEN")
        server, token = farm["url"], token or farm["token"]
    return TunefarmClient(server, token)


def resolve_device(client: TunefarmClient, device: str) -> str:
    """--device cpu|cuda -> the farm's class (printed), an exact class as is."""
    resolved = client.resolve_device(device)
    if device in DEVICE_KINDS:
        console.print(f"device {device} -> {resolved}")
    return resolved


def parse_strategy_options(text: str | None) -> dict:
    """--strategy-options 'members=8,acquisition=ei,stall=null' (a value is read as JSON where it parses, else as a
    string) or a JSON object -> the job's strategy options (which exist and their bounds, the server checks)."""
    if text is not None and text.strip().startswith("{"):
        try:
            options = json.loads(text)
        except ValueError as exc:
            raise CliError(f"--strategy-options {text!r}: not a JSON object ({exc})") from None
        if not isinstance(options, dict):
            raise CliError(f"--strategy-options {text!r}: not a JSON object")
        return options
    options: dict = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        name, eq, value = (x.strip() for x in part.partition("="))
        if not eq or not name:
            raise CliError(f"--strategy-options {text!r}: {part.strip()!r} is not name=value")
        try:
            options[name] = json.loads(value)
        except ValueError:
            options[name] = value
    return options


def parse_measure(text: str | None) -> dict:
    """--measure 'max_time_s=0.5,recheck_top=2,flush_cache=false' -> the job's measurement options (numbers and
    true/false; which names exist and their bounds, the server checks and says)."""
    options: dict = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        name, eq, value = (x.strip() for x in part.partition("="))
        if not eq or not name:
            raise CliError(f"--measure {text!r}: {part.strip()!r} is not name=value")
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if isinstance(parsed, bool) or (isinstance(parsed, (int, float)) and math.isfinite(parsed)):
            options[name] = parsed
        else:
            raise CliError(f"--measure {name}={value}: a measurement option is a finite number or true/false")
    return options
