"""A hash of every proposal of seeded model-guided runs, to show that a rewrite of the strategy's hot path left its
search exactly as it was: run it before and after, and compare the hashes line by line. From the repository root:

    python3 benchmarks/results/2026-11-28-exact-rewrites/proposal_hashes.py > /tmp/after.txt

It covers three paths:
- recorded tables with lowered-IR features, from nothing and from a transfer model of the same op's other tables;
- synthetic spaces (knob features, listed);
- a compiler_core matmul space too large to list (random draws from the knobs' product), with lowered and knob
  features, runtimes from `tuner_overhead.synthetic_runtime`.

The last column is each run's strategy time, for a rough comparison only.
"""
import hashlib
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(REPO / "benchmarks"), str(REPO)]

import search_efficiency as se  # noqa: E402
import tuner_overhead as to  # noqa: E402

import compiler_core as cc  # noqa: E402
from tuner_server.replay import context_for  # noqa: E402
from tuner_server.search import make_strategy  # noqa: E402
from tuner_server.search.base import OK, Observation, StrategyContext  # noqa: E402

TABLES = ["cpu-matmul-256x256x256", "gpu-matmul-f32-2048", "gpu-conv2d-f32-32x128x28x28-k128", "gpu-matmul-f16-2048"]
SYNTHETIC = ["synth-basins-11k12-s32", "synth-needle-10k11-s3", "synth-noisy-7k11-s16"]


def hashed(search, measure, budget: int) -> tuple[str, float]:
    digest, spent, n = hashlib.sha256(), 0.0, 0
    while n < budget:
        t0 = time.perf_counter()
        configs = search.propose(min(8, budget - n))
        spent += time.perf_counter() - t0
        if not configs:
            break
        digest.update(json.dumps(configs, sort_keys=True).encode())
        results = [measure(c) for c in configs]
        t0 = time.perf_counter()
        search.observe(results)
        spent += time.perf_counter() - t0
        n += len(results)
    return digest.hexdigest()[:12], spent


def main() -> None:
    args = se.parse_args(["--tables", str(REPO / "benchmarks" / "data" / "[cg]pu-[mc]*.json.gz"),
                          "--synthetic", ",".join(SYNTHETIC)])
    spaces = se.load_spaces(args)
    for name in TABLES + SYNTHETIC:
        table = spaces[name]
        runs = [(f"s{seed}", seed, None) for seed in (0, 1)]
        if table.workload_key is not None:
            runs.append(("transfer s0", 0, se.transfer_model(table, list(spaces.values()))[0]))
        for label, seed, model in runs:
            search = make_strategy("model", context_for(table, seed, {}, cost_model=model))
            digest, spent = hashed(search, table.measure, 256)
            print(f"{name} {label} {digest} {spent:.2f}s", flush=True)
    workload, target = to.matmul("256,384,512"), cc.cpu_target(isa="avx2", cores=1)
    space = cc.get_space(workload, target)

    def measure(config: dict) -> Observation:
        runtime = to.synthetic_runtime(workload, config)
        return Observation(config, runtime, OK) if runtime else Observation(config, None, "RUNTIME_ERROR")

    for seed in (0, 1):
        for options in ({}, {"own_features": "knobs"}):
            context = StrategyContext(space, seed=seed, options=dict(options), workload_key=workload.key,
                                      target=target)
            digest, spent = hashed(make_strategy("model", context), measure, 160)
            print(f"matmul-256x384x512 s{seed} {json.dumps(options)} {digest} {spent:.2f}s", flush=True)


if __name__ == "__main__":
    main()
