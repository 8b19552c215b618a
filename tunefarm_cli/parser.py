"""The `tunefarm` argument parser: one sub-command per user action, every option with help and its default."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn


class Parser(argparse.ArgumentParser):
    """A mistake on the command line is one line on stderr and exit code 1, as every other user mistake is (argparse
    prints its usage and exits 2); `tunefarm COMMAND --help` still shows the usage."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {message} (`{self.prog} --help` lists the options)", file=sys.stderr)
        raise SystemExit(1)


class Formatter(argparse.ArgumentDefaultsHelpFormatter):
    """Each option's help ends with its default, unless it has none (None, False) or names its own."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.required or action.default in (None, False) or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


FORMATTER = Formatter
DEVICE_HELP = "'cpu', 'cuda' (this farm's class of that kind) or an exact device class"
MEASURE_HELP = ("measurement options, name=value comma-separated, e.g. max_time_s=0.5,recheck_top=2 (`GET /v1/ops` "
                "lists them with their bounds; unset ones take the device kind's defaults)")
JOB_STATES = ("queued", "running", "done", "failed", "cancelled")


def _global_options(p: argparse.ArgumentParser, default=None) -> None:
    p.add_argument("--server", default=default, help="REST URL (default: $TUNEFARM_URL, else the running "
                   "`tunefarm up` farm of the data directory)")
    p.add_argument("--token", default=default, help="bearer token (default: $TUNEFARM_TOKEN, else the up farm's)")
    p.add_argument("--data-dir", type=Path, default=default, help="the embedded farm's directory (default: "
                   "$TUNEFARM_DATA_DIR, else the nearest .tunefarm here or in a parent, else ./.tunefarm)")


# The global options are also accepted after the command (`tunefarm tune --server URL ...`); there they leave the
# value given before the command (or its default) alone unless given.
AFTER_COMMAND = Parser(add_help=False)
_global_options(AFTER_COMMAND, default=argparse.SUPPRESS)


def _command(sub, name: str, help_text: str, **kw) -> argparse.ArgumentParser:
    return sub.add_parser(name, help=help_text, description=help_text, formatter_class=FORMATTER,
                          parents=[AFTER_COMMAND], **kw)


def _workload_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--op", required=True, help="op name (`tunefarm ops` lists them)")
    p.add_argument("--params", required=True, help="comma-separated name=value, e.g. M=512,N=512,K=512")
    p.add_argument("--device", required=True, help=DEVICE_HELP)


def _message_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("-m", "--message", default=None, help="a note recorded with the new version")


def _farm_commands(sub) -> None:
    up = _command(sub, "up", "embedded farm: tuner on SQLite + one agent per device, until Ctrl-C")
    up.add_argument("--rest-port", type=int, default=0, help="REST port (0: a free one)")
    up.add_argument("--grpc-port", type=int, default=0, help="gRPC port for the agents (0: a free one)")
    up.add_argument("--devices", default=None,
                    help="comma-separated agents to start: cpu, cuda:N (default: cpu and every local GPU)")
    up.add_argument("--log-level", default="WARNING", choices=("DEBUG", "INFO", "WARNING", "ERROR"),
                    help="of the tuner and agents (their logs are DATA_DIR/*.log)")
    demo = _command(sub, "demo", "up + tune a real op + print the best schedule vs the default and numpy")
    demo.add_argument("--op", default="matmul", help="op name")
    demo.add_argument("--params", default="M=512,N=512,K=512,dtype=float32", help="the op's params")
    demo.add_argument("--trials", type=int, default=64, help="trial budget")
    demo.add_argument("--strategy", default="model", help="search strategy")
    demo.add_argument("--seed", type=int, default=0, help="search seed")
    demo.add_argument("--measure", default=None, metavar="NAME=VALUE,...", help=MEASURE_HELP)
    ops = _command(sub, "ops", "the ops the farm tunes: params, dtypes; with a name, its knobs per target (or a "
                               "search strategy's options)")
    ops.add_argument("name", nargs="?", default=None,
                     help="show this op's params and search spaces, or this search strategy's options")
    devices = _command(sub, "devices", "device classes, their agents and whether any is online")
    devices.add_argument("--kind", choices=("cpu", "cuda"), default=None, help="only this kind (default: all)")


def _job_commands(sub) -> None:
    tune = _command(sub, "tune", "submit a tuning job and follow it (Ctrl-C detaches; the job keeps running)")
    _workload_args(tune)
    tune.add_argument("--trials", type=int, default=64, help="trial budget")
    tune.add_argument("--strategy", default="model", help="search strategy (`tunefarm ops` lists them)")
    tune.add_argument("--strategy-options", default=None, metavar="NAME=VALUE,...",
                      help="the strategy's options, name=value comma-separated (e.g. acquisition=ei,members=8) or a "
                           "JSON object; `tunefarm ops STRATEGY` lists them with their defaults and bounds")
    tune.add_argument("--seed", type=int, default=None, help="search seed (default: random)")
    tune.add_argument("--measure", default=None, metavar="NAME=VALUE,...", help=MEASURE_HELP)
    tune.add_argument("--priority", type=int, default=0,
                      help="share of the agents against other jobs: +10 doubles it (default 0)")
    tune.add_argument("--no-wait", action="store_true", help="submit and return at once")
    tune.add_argument("--cancel-on-interrupt", action="store_true", help="Ctrl-C cancels the job instead of detaching")
    tune.add_argument("--stall-warning", type=float, default=10.0, metavar="SECONDS",
                      help="warn when no agent for the job has been online this long")
    follow = _command(sub, "follow", "follow a job's progress until it ends (Ctrl-C stops following)")
    follow.add_argument("job", help="job id")
    follow.add_argument("--stall-warning", type=float, default=10.0, metavar="SECONDS",
                        help="warn when no agent for the job has been online this long")
    cancel = _command(sub, "cancel", "cancel a queued or running job (its measured trials stay)")
    cancel.add_argument("job", help="job id")
    jobs = _command(sub, "jobs", "list jobs, newest first")
    jobs.add_argument("--state", choices=JOB_STATES, default=None, help="only jobs in this state (default: all)")
    jobs.add_argument("--op", default=None, help="with --params: only jobs of this workload")
    jobs.add_argument("--params", default=None, help="with --op: the workload's params")
    jobs.add_argument("--device", default=None, help=f"only jobs on this class: {DEVICE_HELP} (default: all)")
    jobs.add_argument("--limit", type=int, default=20, help="at most this many")


def _schedule_commands(sub) -> None:
    best = _command(sub, "best", "the best schedule of (op, params, device)")
    _workload_args(best)
    best.add_argument("--version", type=int, default=None, help="this version instead of the head")
    best.add_argument("--as-of", default=None, help="the head at this ISO 8601 time, e.g. 2026-01-01T12:00:00Z")
    best.add_argument("--source", action="store_true", help="print the generated kernel source")
    best.add_argument("--predict", action="store_true",
                      help="for a shape nobody tuned, the config the class's cost model ranks best (never measured)")
    best.add_argument("--enqueue", action="store_true", help="with --predict (admin): also queue its tuning job")
    history = _command(sub, "history", "the version history of a schedule, newest first")
    _workload_args(history)
    history.add_argument("--limit", type=int, default=50, help="at most this many versions")
    diff = _command(sub, "diff", "the knobs that differ between two versions of a schedule")
    _workload_args(diff)
    diff.add_argument("v1", type=int, help="the older version")
    diff.add_argument("v2", type=int, help="the newer version")
    pin = _command(sub, "pin", "pin a version as the head (automatic promotion stops), or --unpin")
    _workload_args(pin)
    which = pin.add_mutually_exclusive_group(required=True)
    which.add_argument("--version", type=int, default=None, help="the version to pin")
    which.add_argument("--trial", default=None, help="pin this verified trial of the key (one that is no version, "
                                                     "e.g. to replace an implausible head)")
    which.add_argument("--unpin", action="store_true", help="remove the pin")
    _message_arg(pin)
    rollback = _command(sub, "rollback", "make an earlier version the head again (as a new version)")
    _workload_args(rollback)
    rollback.add_argument("--to-version", type=int, required=True, help="the version to bring back")
    _message_arg(rollback)


def _exchange_commands(sub) -> None:
    export = _command(sub, "export", "export trials and schedule versions as JSON lines")
    export.add_argument("--op", default=None, help="only this op (default: everything)")
    export.add_argument("-o", "--output", default=None, help="write to this file (default: stdout)")
    imp = _command(sub, "import", "import another farm's JSON lines export")
    imp.add_argument("input", help="a file written by `tunefarm export`")
    tokens = _command(sub, "tokens", "REST tokens (admin): create, list, revoke")
    actions = tokens.add_subparsers(dest="action", required=True, metavar="create|list|revoke",
                                    help="what to do with tokens")
    create = _command(actions, "create", "a new token; its plaintext is printed this once")
    create.add_argument("name", help="what the token is for, e.g. ci-reader")
    create.add_argument("--scope", choices=("read", "admin"), default="read", help="read: GETs; admin: also writes")
    _command(actions, "list", "every token (id, name, scope, revoked)")
    revoke = _command(actions, "revoke", "revoke a token by id")
    revoke.add_argument("id", help="the token's id (`tunefarm tokens list`)")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="tunefarm", description="tunefarm: a kernel-autotuning farm",
                                     formatter_class=FORMATTER)
    _global_options(parser)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                help="`tunefarm COMMAND --help` shows its options")
    sub.add_parser("server", help="run the tuner server (see `tunefarm server --help`)", add_help=False)
    sub.add_parser("agent", help="run a device agent (see `tunefarm agent --help`)", add_help=False)
    for add in (_farm_commands, _job_commands, _schedule_commands, _exchange_commands):
        add(sub)
    return parser
