"""A random sweep of the emulable CUDA templates: random shapes (odd, tiny and round), dtypes and configs through the
CPU emulator, each checked against the numpy reference. A bug hunt to run by hand, for as long as one likes; the
suite's emulated tests are its fixed, fast part.

    python3 -m tests.cpu.emulated_sweep --seed 1 --minutes 10

Prints a line per workload and a FAIL line (workload, target, config, why) per failing config; exits 1 if any failed.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time

import compiler_core as cc
from tests.cpu.cuda_emulation import compiler_available, emulated_failures

ROW_OPS = ("softmax", "layernorm", "reduce_sum", "transpose")
EXPRESSIONS = ("gelu(x*w+b)", "relu(x)+y", "sigmoid(x)*x", "max(x, 0.5)*b", "tanh(x)-exp(y*0.1)")
HALF = ("float16", "bfloat16")
EDGES = (1, 2, 3, 31, 32, 33, 63, 64, 65, 127, 129)


def _extent(rng: random.Random, most: int) -> int:
    """Up to `most`, a tiny one, or one next to a power of two: the edges a template must get right."""
    return rng.choice([rng.randint(1, most), rng.randint(1, 9), rng.choice(EDGES)])


def random_case(rng: random.Random) -> tuple[cc.Workload, cc.Target]:
    """A workload and the target whose emulable template runs it (sm_80 for half GEMMs and conv2d: WMMA; attention's
    WMMA engine runs on sm_90 too)."""
    kind = rng.choice((*ROW_OPS, "elementwise", "matmul", "batch_matmul", "conv2d", "attention"))
    dtype = rng.choice(("float32", *HALF))
    if kind == "attention":  # head_dim: whole WMMA fragments (both engines) or any
        return cc.make_workload("attention", {
            "heads": _extent(rng, 3), "seq_q": _extent(rng, 70), "seq_kv": _extent(rng, 150),
            "head_dim": rng.choice((16, 32, 64, _extent(rng, 40))), "causal": rng.randint(0, 1), "dtype": dtype}), \
            cc.cuda_target("sm_90")
    if kind in ROW_OPS:
        return cc.make_workload(kind, {"rows": _extent(rng, 70), "cols": _extent(rng, 3000), "dtype": dtype}), \
            cc.cuda_target("sm_90")
    if kind == "elementwise":
        expr = rng.choice(EXPRESSIONS)
        params = {"rows": _extent(rng, 60), "cols": _extent(rng, 2000), "expr": expr, "dtype": dtype}
        vectors = [name for name in "bw" if name in expr]
        if vectors:
            params["vectors"] = ",".join(vectors)
        return cc.make_workload("elementwise", params), cc.cuda_target("sm_90")
    target = cc.cuda_target("sm_80" if dtype in HALF else "sm_90")
    if kind == "matmul":
        return cc.make_workload("matmul", {"M": _extent(rng, 200), "N": _extent(rng, 200), "K": _extent(rng, 200),
                                           "dtype": dtype}), target
    if kind == "batch_matmul":
        return cc.make_workload("batch_matmul", {"batch": _extent(rng, 3), "M": _extent(rng, 70),
                                                 "N": _extent(rng, 70), "K": _extent(rng, 70), "dtype": dtype}), target
    r = rng.choice((1, 3, 5))
    return cc.make_workload("conv2d", {
        "N": rng.randint(1, 2), "C": _extent(rng, 20), "H": rng.randint(r, 12), "W": rng.randint(r, 12),
        "K": _extent(rng, 40), "R": r, "S": r, "stride": rng.choice((1, 2)), "pad": rng.randint(0, r // 2 + 1),
        "dtype": dtype}), target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--workloads", type=int, default=None, help="stop after this many (default: no limit)")
    parser.add_argument("--configs", type=int, default=6, help="per workload: the default and random valid ones")
    args = parser.parse_args(argv)
    if not compiler_available():
        print("emulated_sweep: g++ is not on PATH", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    deadline = time.monotonic() + 60 * args.minutes
    ran = failed = workloads = 0
    while time.monotonic() < deadline and (args.workloads is None or workloads < args.workloads):
        try:
            w, target = random_case(rng)
        except cc.WorkloadError:  # a combination the op refuses (too large a pad, say): draw again
            continue
        space = cc.get_space(w, target)
        configs = list({cc.config_key(c): c for c in [cc.default_config(w, target),
                                                      *space.sample(rng, args.configs - 1)]}.values())
        failures = emulated_failures(w, configs, target, cc.random_inputs(w, seed=rng.randrange(1 << 16)))
        for config, why in failures:
            print(f"FAIL {w.key} {target.arch} {json.dumps(config)} {why[:400]}", flush=True)
        workloads, ran, failed = workloads + 1, ran + len(configs), failed + len(failures)
        print(f"[{workloads}] {w.key} on {target.arch}: {len(configs) - len(failures)}/{len(configs)} exact "
              f"({ran} configs, {failed} failed so far)", flush=True)
    print(f"emulated_sweep: {workloads} workloads, {ran} configs, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
