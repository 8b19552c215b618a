"""The `tunefarm` command line: one sub-command per user action."""
from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tunefarm", description="tunefarm: a kernel-autotuning farm")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="tune a real op on this machine and print the best schedule")
    demo.add_argument("--op", default="matmul")
    demo.add_argument("--params", default="M=512,N=512,K=512,dtype=float32",
                      help="comma-separated name=value params of the op")
    demo.add_argument("--trials", type=int, default=64)
    demo.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.command == "demo":
        from tunefarm_cli.local_demo import run_demo

        return run_demo(args.op, args.params, args.trials, args.seed)
    return 2


if __name__ == "__main__":
    sys.exit(main())
