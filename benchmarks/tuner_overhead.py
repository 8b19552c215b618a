"""Tuner overhead of the model-guided strategy per proposed candidate, with 10,000 trials of history.

History: --history real configs of a real space (compiler_core's CPU matmul space, a seeded sample), with runtimes
from a smooth function of their lowered-IR features (a few percent of them failing), featurized once up front in a
process pool as a running tuner would have done when each trial arrived. Two scenarios, each proposing --proposals
configs in batches of --batch and observing their (synthetic) runtimes:

- own: a job whose own history holds the 10,000 trials (a long job after a restart): the first call fits a model
  on all of them, later refits are amortized (`refit_growth`);
- transfer: a device-class model pre-trained on the 10,000 trials (trained once, persisted; its fit time is shown
  apart) starts a job on another shape with no history of its own.

Per candidate it reports the total (model fits, annealing, bookkeeping and lowering new configs for features) and
the same without lowering, since lowering is compiler_core's cost, cached, and could move to the build pool.

    nice -n 10 python benchmarks/tuner_overhead.py --history 10000 --proposals 256 --batch 16
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import sys
import time
import zlib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import compiler_core as cc  # noqa: E402
from compiler_core.space import config_key  # noqa: E402
from tuner_server.cost_model import (  # noqa: E402
    CostModel,
    FeatureCache,
    LoweredFeatures,
    ranking_data,
    shared_cache,
)
from tuner_server.cost_model.featurize import target_key  # noqa: E402
from tuner_server.search import Observation, StrategyContext, make_strategy  # noqa: E402


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--history", type=int, default=10_000)
    p.add_argument("--proposals", type=int, default=256)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--shape", default="256,256,256", help="M,N,K of the history's matmul")
    p.add_argument("--job-shape", default="192,384,320", help="M,N,K of the transfer scenario's job")
    p.add_argument("--cores", type=int, default=1, help="cores of the CPU target")
    p.add_argument("--processes", type=int, default=2, help="processes that featurize the history")
    p.add_argument("--options", default="{}", help="JSON options for the model strategy")
    return p.parse_args(argv)


def workload(shape: str) -> cc.Workload:
    m, n, k = (int(v) for v in shape.split(","))
    return cc.make_workload("matmul", {"M": m, "N": n, "K": k})


def featurize_chunk(workload_key: str, cores: int, configs: list[dict]) -> np.ndarray:
    return LoweredFeatures(workload_key, cc.cpu_target(cores=cores), FeatureCache())(configs)


def featurize_history(w: cc.Workload, target, configs: list[dict], processes: int) -> tuple[np.ndarray, float]:
    t0 = time.perf_counter()
    chunks = [configs[i:i + 250] for i in range(0, len(configs), 250)]
    with ProcessPoolExecutor(processes, mp_context=mp.get_context("spawn")) as pool:
        X = np.concatenate(list(pool.map(featurize_chunk, [w.key] * len(chunks), [target.cores] * len(chunks),
                                         chunks)))
    prefix = f"{w.key}@{target_key(target)}"
    for config, row in zip(configs, X, strict=True):
        shared_cache().put((prefix, config_key(config)), row)
    return X, time.perf_counter() - t0


class SmoothRuntime:
    """runtime = exp(linear + quadratic form of standardized features); 4 % of configs fail to compile."""

    def __init__(self, X: np.ndarray, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.mean, self.std = np.nanmean(X, 0), np.nanstd(X, 0) + 1e-6
        d = X.shape[1]
        self.w, self.v = rng.normal(size=d) / np.sqrt(d), rng.normal(size=d) / np.sqrt(d)

    def __call__(self, config: dict, x: np.ndarray) -> Observation:
        if np.isnan(x).all() or zlib.crc32(config_key(config).encode()) % 25 == 0:
            return Observation(config, None, "COMPILE_ERROR")
        z = np.nan_to_num((x - self.mean) / self.std)
        return Observation(config, float(1e-3 * np.exp(np.clip(0.5 * z @ self.w + 0.3 * (z @ self.v) ** 2, -30, 30))))


def run_job(context: StrategyContext, device, args) -> dict:
    measure_features = LoweredFeatures(context.workload_key, context.target, FeatureCache(max_entries=10**6))
    t0 = time.perf_counter()
    strategy = make_strategy("model", context)
    times, sizes = [time.perf_counter() - t0], [0]
    while sum(sizes) < args.proposals:
        t0 = time.perf_counter()
        batch = strategy.propose(min(args.batch, args.proposals - sum(sizes)))
        elapsed = time.perf_counter() - t0
        if not batch:
            break
        results = [device(c, x) for c, x in zip(batch, measure_features(batch), strict=True)]
        t0 = time.perf_counter()
        strategy.observe(results)
        times.append(elapsed + time.perf_counter() - t0)
        sizes.append(len(batch))
    proposed, total, lowering = sum(sizes), sum(times), strategy.features.lowering_s
    return {"candidates": proposed, "total_ms": total * 1e3 / proposed, "first_call_s": times[0] + times[1],
            "steady_ms": 1e3 * sum(times[2:]) / max(1, proposed - sizes[1]),
            "lowerings": strategy.features.computed, "lowering_ms": lowering * 1e3 / proposed,
            "without_lowering_ms": (total - lowering) * 1e3 / proposed}


def main(argv=None) -> None:
    import json

    args = parse_args(argv)
    target = cc.cpu_target(cores=args.cores)
    w = workload(args.shape)
    configs = cc.get_space(w, target).sample(random.Random(0), args.history)
    X, featurize_s = featurize_history(w, target, configs, args.processes)
    print(f"history: {len(configs)} configs of {w.key}, featurized in {featurize_s:.0f} s with {args.processes} "
          f"processes ({featurize_s * args.processes / len(configs) * 1e3:.1f} ms per config per process)",
          file=sys.stderr, flush=True)
    device = SmoothRuntime(X)
    history = [device(c, x) for c, x in zip(configs, X, strict=True)]
    options = json.loads(args.options)
    own = run_job(StrategyContext(cc.get_space(w, target), seed=0, options=options, history=history,
                                  workload_key=w.key, target=target), device, args)
    t0 = time.perf_counter()
    data = ranking_data([(X, [o.median_s for o in history], [o.status for o in history])])
    base = CostModel(cc.FEATURE_NAMES).fit(data, rounds=60)
    base_fit_s = time.perf_counter() - t0
    job = workload(args.job_shape)
    transfer = run_job(StrategyContext(cc.get_space(job, target), seed=0, options=options, workload_key=job.key,
                                       target=target, cost_model=base), device, args)
    print(f"device-class model fitted on {args.history} trials in {base_fit_s:.2f} s (once, persisted)")
    print("| scenario | candidates | total ms/cand. | without lowering ms/cand. | lowering ms/cand. | lowerings | "
          "first call s | after it, ms/cand. |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in (("own history", own), ("transfer", transfer)):
        print(f"| {name} | {r['candidates']} | {r['total_ms']:.1f} | {r['without_lowering_ms']:.2f} | "
              f"{r['lowering_ms']:.1f} | {r['lowerings']} | {r['first_call_s']:.2f} | {r['steady_ms']:.1f} |")


if __name__ == "__main__":
    main()
