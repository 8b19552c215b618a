"""How fast a host's one core runs the kinds of work the tuner's hot path does: a pure-Python loop, small numpy
matrix products, and a LightGBM fit the size of a job's ensemble member (best of a few runs, ms). Run beside
benchmarks/tuner_overhead.py on each host, so per-candidate overheads of different hosts can be compared:

    python3 benchmarks/results/2026-11-27-overhead-hosts/host_speed.py
"""
import time

import lightgbm as lgb
import numpy as np


def best_ms(f, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return 1e3 * min(times)


if __name__ == "__main__":
    X = np.random.default_rng(0).random((2000, 40))
    y = X @ np.arange(40)
    params = {"objective": "regression", "verbose": -1, "num_threads": 1}
    print(f"python loop of 1e6: {best_ms(lambda: sum(i * i for i in range(10**6))):.1f} ms")
    print(f"numpy 256x40 @ 40x256, 20 times: {best_ms(lambda: [X[:256] @ X[:256].T for _ in range(20)]):.2f} ms")
    print(f"LightGBM, 40 rounds on 2000x40: {best_ms(lambda: lgb.train(params, lgb.Dataset(X, y), 40), 3):.1f} ms")
