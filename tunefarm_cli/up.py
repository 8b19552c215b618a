"""`tunefarm up`: the embedded farm in the foreground until Ctrl-C or SIGTERM; its processes die with it, an agent
that exits is started again (and one that cannot start is reported and left down), and the farm stops with exit code 1
if its tuner exits."""
from __future__ import annotations

import re
import signal
import socket
import sys
import threading

from tunefarm_cli.commands import CliError
from tunefarm_cli.embedded import STOP_GRACE_S, EmbeddedFarm, local_devices

DEVICE = re.compile(r"cpu|cuda:\d+")


def parse_devices(text: str | None) -> list[str]:
    """'cpu,cuda:0' -> ['cpu', 'cuda:0']; None -> every local device."""
    if text is None:
        return local_devices()
    devices = [d.strip() for d in text.split(",") if d.strip()]
    bad = [d for d in devices if not DEVICE.fullmatch(d)]
    if bad or not devices:
        raise CliError(f"--devices {text!r}: give cpu and/or cuda:N, comma-separated (e.g. cpu,cuda:0)")
    if len(set(devices)) != len(devices):
        raise CliError(f"--devices {text!r} names a device twice: one agent per device")
    return devices


def check_port(port: int, flag: str) -> None:
    if port == 0:
        return
    if not 0 < port < 65536:
        raise CliError(f"{flag} {port} is not a port (1..65535, or 0 for a free one)")
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError as exc:
            raise CliError(f"{flag} {port} is not free ({exc.strerror}): pick another, or 0 for a free one") from None


def cmd_up(args) -> int:
    devices = parse_devices(args.devices)
    check_port(args.rest_port, "--rest-port")
    check_port(args.grpc_port, "--grpc-port")
    if args.rest_port and args.rest_port == args.grpc_port:
        raise CliError("--rest-port and --grpc-port must differ")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    farm = EmbeddedFarm(args.data_dir, devices=devices, rest_port=args.rest_port, grpc_port=args.grpc_port,
                        log_level=args.log_level)
    try:
        farm.start()
    except RuntimeError as exc:  # FarmBusy too
        raise CliError(str(exc)) from None
    with farm:
        print(f"tunefarm up: REST {farm.url}  gRPC 127.0.0.1:{farm.grpc_port}  agents: {', '.join(farm.devices)}")
        print(f"data directory: {args.data_dir.resolve()} (commands run here or below, or with "
              f"TUNEFARM_DATA_DIR={args.data_dir.resolve()}, find this farm)")
        print(f"admin token: {farm.admin_token}  (also in {args.data_dir}/farm.json)")
        print(f"dashboard: {farm.url}/dashboard (sign in with the token)  API docs: {farm.url}/docs")
        print("Ctrl-C stops the farm", flush=True)
        failed = None
        try:
            while not stop.wait(1.0):
                for line in farm.supervise():
                    print(f"tunefarm up: {line}", flush=True)
        except KeyboardInterrupt:
            pass
        except RuntimeError as exc:  # the tuner exited: nothing left to serve
            failed = str(exc)
        if failed:
            print(f"tunefarm up: {failed}; stopping the agents", file=sys.stderr, flush=True)
            farm.stop(grace_s=5.0)
            return 1
        print(f"\ntunefarm up: stopping (agents finish or return their leases, at most {STOP_GRACE_S:.0f} s)",
              flush=True)
    print("tunefarm up: stopped", flush=True)
    return 0
