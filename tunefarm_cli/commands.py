"""What every client sub-command shares: the consoles, the one-line user error, and the connection to a farm."""
from __future__ import annotations

import math
import os
import sys
from pathlib import Path

from rich.console import Console

from compiler_core.workload import WorkloadError
from compiler_core.workload import parse_params as workload_params
from tunefarm_cli.farm_dir import FARM_FILE, running_farm
from tunefarm_client.client import DEVICE_KINDS, TunefarmClient
from tuner_server.strict_json import NonFiniteNumber, loads

PIPED_WIDTH = 1000  # a pipe or a file gets whole lines: no table column cut to "sta…" at 80, no message folded
console = Console(width=None if sys.stdout.isatty() or "COLUMNS" in os.environ else PIPED_WIDTH)


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


def parse_params(text: str, flag: str = "--params") -> dict:
    """--params 'M=512,N=512,K=512' (or 'rows=8,cols=8,expr=max(x,w),vectors=w,b') -> the op's params, split and read
    as compiler_core reads a workload key: an integer is written as JSON writes one ('+64' or '064' stays text, which
    the server refuses for an integer param), and a param named twice is a CliError, as a repeated query parameter is
    the server's 422."""
    try:
        return workload_params(text, source=flag)
    except WorkloadError as exc:
        raise CliError(str(exc)) from None


def _name_values(flag: str, text: str | None) -> list[tuple[str, str]]:
    """'a=1, b=x' -> [('a', '1'), ('b', 'x')]; a part that is not name=value is a CliError naming `flag`."""
    pairs = []
    for part in (text or "").split(","):
        if not part.strip():
            continue
        name, eq, value = (x.strip() for x in part.partition("="))
        if not eq or not name:
            raise CliError(f"{flag} {text!r}: {part.strip()!r} is not name=value")
        pairs.append((name, value))
    return pairs


def _option_value(flag: str, name: str, value: str):
    """The JSON value `value` spells, else `value` itself (a bare word such as ei is a string). A number that is not
    finite (NaN, Infinity, 1e999, or Python's nan and inf) is a CliError: no option takes one, and sent as a string
    it would be refused as the wrong type."""
    try:
        finite = math.isfinite(float(value))
    except ValueError:  # not a number at all
        finite = True
    if not finite:
        raise CliError(f"{flag} {name}={value}: not a finite number, and no option takes NaN or an infinity: give a "
                       "finite number (`tunefarm ops NAME` lists a strategy's options with their bounds)")
    try:
        return loads(value)
    except NonFiniteNumber as exc:  # inside an array or object
        raise CliError(f"{flag} {name}={value}: {exc}") from None
    except ValueError:  # not JSON (MalformedJSON is a ValueError too): a string
        return value


def parse_strategy_options(text: str | None) -> dict:
    """--strategy-options 'members=8,acquisition=ei,stall=null' (a value is read as JSON where it parses, else as a
    string) or a JSON object -> the job's strategy options (which exist and their bounds, the server checks)."""
    if text is not None and text.strip().startswith("{"):
        try:
            options = loads(text)
        except NonFiniteNumber as exc:
            raise CliError(f"--strategy-options {text!r}: {exc}") from None
        except ValueError:
            options = None
        if not isinstance(options, dict):
            raise CliError(f"--strategy-options {text!r}: not a JSON object")
        return options
    return {name: _option_value("--strategy-options", name, value)
            for name, value in _name_values("--strategy-options", text)}


def parse_measure(text: str | None) -> dict:
    """--measure 'max_time_s=0.5,recheck_top=2,flush_cache=false' -> the job's measurement options (numbers and
    true/false; which names exist and their bounds, the server checks and says)."""
    options: dict = {}
    for name, value in _name_values("--measure", text):
        try:
            parsed = _option_value("--measure", name, value)
        except CliError:
            parsed = None  # refused below, naming what a measurement option is
        if isinstance(parsed, bool) or (isinstance(parsed, (int, float)) and math.isfinite(parsed)):
            options[name] = parsed
        else:
            raise CliError(f"--measure {name}={value}: a measurement option is a finite number or true/false")
    return options
