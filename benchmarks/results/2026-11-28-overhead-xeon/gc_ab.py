"""benchmarks/tuner_overhead.py with CPython's default garbage-collector thresholds ('default': the tuner's
`tune_for_tuner` left out) or the tuner's ('tuned'), counting the collections that ran inside the driver's ticks and
their time. Alternate the two modes in separate processes on an idle host:

    python3 benchmarks/results/2026-11-28-overhead-xeon/gc_ab.py default --history 10000 --budget 256 --repeats 2
    python3 benchmarks/results/2026-11-28-overhead-xeon/gc_ab.py tuned --history 10000 --budget 256 --repeats 2
"""
import gc
import pathlib
import runpy
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

import tuner_server.driver as driver  # noqa: E402
import tuner_server.gc_policy as gc_policy  # noqa: E402

collections = {"count": 0, "seconds": 0.0, "started": 0.0}


def on_collection(phase: str, info: dict) -> None:
    if phase == "start":
        collections["started"] = time.perf_counter()
    else:
        collections["count"] += 1
        collections["seconds"] += time.perf_counter() - collections["started"]


def counted(tick):
    def tick_counting_collections(self, *args, **kwargs):
        gc.callbacks.append(on_collection)
        try:
            return tick(self, *args, **kwargs)
        finally:
            gc.callbacks.remove(on_collection)
    return tick_counting_collections


if __name__ == "__main__":
    mode = sys.argv.pop(1)
    if mode not in ("default", "tuned"):
        raise SystemExit("first argument: default or tuned")
    if mode == "default":
        gc_policy.tune_for_tuner = lambda: None
    driver.JobDriver.tick = counted(driver.JobDriver.tick)
    sys.argv = ["tuner_overhead.py", *sys.argv[1:]]
    runpy.run_path(str(REPO / "benchmarks" / "tuner_overhead.py"), run_name="__main__")
    print(f"{mode}: thresholds {gc.get_threshold()}; collections inside driver ticks: {collections['count']}, "
          f"{collections['seconds'] * 1e3:.0f} ms", flush=True)
