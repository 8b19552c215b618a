"""The `tunefarm` command line: one sub-command per user action."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

PASSTHROUGH = {"server": "tuner_server.main", "agent": "device_agent.main"}
DEFAULT_DATA_DIR = Path(".tunefarm")


def _schedule_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--op", required=True)
    p.add_argument("--params", required=True, help="comma-separated name=value, e.g. M=512,N=512,K=512")
    p.add_argument("--device", required=True, help="device class (tune also takes 'cpu' or 'cuda')")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tunefarm", description="tunefarm: a kernel-autotuning farm")
    parser.add_argument("--server", default=None, help="REST URL (default: the `tunefarm up` farm, or $TUNEFARM_URL)")
    parser.add_argument("--token", default=None, help="bearer token (default: $TUNEFARM_TOKEN or the up farm's)")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR, help="embedded farm files")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("server", help="run the tuner server (see `tunefarm server --help`)", add_help=False)
    sub.add_parser("agent", help="run a device agent (see `tunefarm agent --help`)", add_help=False)
    sub.add_parser("up", help="embedded farm: tuner on SQLite + one agent per local device, until Ctrl-C")
    demo = sub.add_parser("demo", help="up + tune a real op + print the best schedule vs default and numpy")
    demo.add_argument("--op", default="matmul")
    demo.add_argument("--params", default="M=512,N=512,K=512,dtype=float32")
    demo.add_argument("--trials", type=int, default=64)
    demo.add_argument("--strategy", default="model")
    demo.add_argument("--seed", type=int, default=0)
    tune = sub.add_parser("tune", help="submit a tuning job and follow it with a progress bar")
    _schedule_args(tune)
    tune.add_argument("--trials", type=int, default=64)
    tune.add_argument("--strategy", default="model")
    tune.add_argument("--seed", type=int, default=None)
    tune.add_argument("--no-wait", action="store_true")
    best = sub.add_parser("best", help="the best schedule of (op, params, device class)")
    _schedule_args(best)
    best.add_argument("--version", type=int, default=None)
    best.add_argument("--as-of", default=None, help="ISO 8601 time")
    best.add_argument("--source", action="store_true", help="print the generated kernel source")
    history = sub.add_parser("history", help="the version history of a schedule")
    _schedule_args(history)
    history.add_argument("--limit", type=int, default=50)
    export = sub.add_parser("export", help="export trials and schedule versions as JSON lines")
    export.add_argument("--op", default=None)
    export.add_argument("-o", "--output", default=None)
    imp = sub.add_parser("import", help="import another farm's JSON lines export")
    imp.add_argument("input")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in PASSTHROUGH:
        import importlib

        return importlib.import_module(PASSTHROUGH[argv[0]]).main(argv[1:])
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        from tunefarm_cli.demo import run_demo
        from tunefarm_client.client import TunefarmError

        try:
            return run_demo(args.op, args.params, args.trials, args.strategy, args.seed, args.data_dir)
        except (TunefarmError, RuntimeError, ValueError) as exc:
            print(f"tunefarm demo: {exc}", file=sys.stderr)
            return 1
    if args.command == "up":
        return _up(args.data_dir)
    return _client_command(args)


def _up(data_dir: Path) -> int:
    import signal
    import threading

    from tunefarm_cli.embedded import EmbeddedFarm, FarmBusy

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        farm = EmbeddedFarm(data_dir).start()
    except (FarmBusy, RuntimeError) as exc:
        print(f"tunefarm up: {exc}", file=sys.stderr)
        return 1
    with farm:
        print(f"tunefarm up: REST {farm.url}  gRPC 127.0.0.1:{farm.grpc_port}  agents: {', '.join(farm.devices)}")
        print(f"admin token: {farm.admin_token}  (also in {data_dir}/farm.json; other commands find it there)")
        print(f"dashboard: {farm.url}/dashboard (sign in with the token)  API docs: {farm.url}/docs")
        try:
            while not stop.wait(1.0):
                pass
        except KeyboardInterrupt:
            pass
    return 0


def _client_command(args) -> int:
    from tunefarm_cli import commands
    from tunefarm_client.client import TunefarmError

    server = args.server or os.environ.get("TUNEFARM_URL")
    token = args.token or os.environ.get("TUNEFARM_TOKEN")
    try:
        with commands.connect(server, token, args.data_dir) as client:
            return getattr(commands, f"cmd_{args.command}")(client, args)
    except TunefarmError as exc:
        print(f"tunefarm {args.command}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
