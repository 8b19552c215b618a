"""The `tunefarm` command line: one sub-command per user action (parser.py), one module per area.

Every user mistake ends as one line on stderr (`tunefarm COMMAND: what is wrong, what to do`) and a non-zero exit
code, never a traceback; Ctrl-C exits with 130, and a closed pipe (`tunefarm export | head`) with 141, silently.
"""
from __future__ import annotations

import os
import sys

from tunefarm_cli.parser import build_parser

PASSTHROUGH = {"server": "tuner_server.main", "agent": "device_agent.main"}
INTERRUPTED = 130
BROKEN_PIPE = 141  # 128 + SIGPIPE, the status of a command a closed pipe stopped


def _client_commands() -> dict:
    from tunefarm_cli import farm, jobs, schedules, tokens

    return {"ops": farm.cmd_ops, "devices": farm.cmd_devices, "export": farm.cmd_export, "import": farm.cmd_import,
            "tune": jobs.cmd_tune, "follow": jobs.cmd_follow, "cancel": jobs.cmd_cancel, "jobs": jobs.cmd_jobs,
            "best": schedules.cmd_best, "history": schedules.cmd_history, "diff": schedules.cmd_diff,
            "pin": schedules.cmd_pin, "rollback": schedules.cmd_rollback, "tokens": tokens.cmd_tokens}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in PASSTHROUGH:
        import importlib

        return importlib.import_module(PASSTHROUGH[argv[0]]).main(argv[1:])
    args = build_parser().parse_args(argv)
    from tunefarm_cli.commands import CliError
    from tunefarm_cli.farm_dir import find_data_dir
    from tunefarm_client.client import TunefarmError

    args.data_dir = find_data_dir(args.data_dir, os.environ.get("TUNEFARM_DATA_DIR"),
                                  ceilings=os.environ.get("TUNEFARM_CEILING_DIRECTORIES"))
    try:
        return _run(args)
    except KeyboardInterrupt:
        print(f"\ntunefarm {args.command}: interrupted", file=sys.stderr)
        return INTERRUPTED
    except (CliError, TunefarmError, ValueError) as exc:  # ValueError: compiler_core's WorkloadError (bad params)
        print(f"tunefarm {args.command}: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `tunefarm export | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's exit flush would fail again
        return BROKEN_PIPE
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        print(f"tunefarm {args.command}:{where} {exc.strerror or exc}", file=sys.stderr)
        return 1


def _run(args) -> int:
    if args.command == "demo":
        from tunefarm_cli.demo import run_demo

        try:
            return run_demo(args.op, args.params, args.trials, args.strategy, args.seed, args.data_dir, args.measure)
        except RuntimeError as exc:  # the farm did not start
            print(f"tunefarm demo: {exc}", file=sys.stderr)
            return 1
    if args.command == "up":
        from tunefarm_cli.up import cmd_up

        return cmd_up(args)
    from tunefarm_cli.commands import connect

    server = args.server or os.environ.get("TUNEFARM_URL")
    token = args.token or os.environ.get("TUNEFARM_TOKEN")
    with connect(server, token, args.data_dir) as client:
        return _client_commands()[args.command](client, args)


if __name__ == "__main__":
    sys.exit(main())
