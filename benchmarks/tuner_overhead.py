"""Tuner overhead per proposed candidate of a model-guided job, with 10,000 trials of its device class in the database.

It runs the tuner's real parts in one process over a real database (SQLite file, or --database-url): the job
driver, the device-class model keeper (`tuner_server.class_models`) and the feature pool, with no agent process:
the benchmark leases the driver's tasks and reports results itself through the repository functions an agent's
reports go through (not timed), with runtimes from a smooth synthetic function of the config's knobs.

1. History: --history trials of --shapes matmul workloads of one CPU device class are appended (seeded samples of
   compiler_core's space; ~4 % fail). The keeper featurizes them in the pool (--workers processes) and fits the
   class model: the one-time cost of a farm that measured them, shown apart.
2. A model-guided job on another shape (--budget trials) starts from that class model. Each round the driver ticks
   (timed: strategy refits, annealing, proposing, queueing, reading results: the tuner's hot path), then the
   batch is leased and reported, and the benchmark waits for the feature pool as an agent's measurement would
   take that long (not timed; its worker CPU is reported). The keeper refits the class model whenever the class's
   trials grew by 10 % (timed, and amortized over the trials that growth needs).

Per candidate it prints the hot path (driver ticks, wall time), the amortized class-model refit, their sum (the
tuner overhead), the feature pool's worker CPU per candidate (off the tuner's hot path, on other cores), and the
hot path's CPU time in this process: on a shared host the wall time also counts what other tenants took, and the CPU
time tells the tuner's own cost apart from that. Last, how long a plain Python loop took on this host before the
history and after the jobs: the hot path is mostly Python, so figures of different hosts compare by it. It is
host_speed.py's loop (benchmarks/results/2026-11-27-overhead-hosts/): the lent GPU machine's Xeon vCPUs ran it in
43-91 ms on 2026-11-28, a 2-core AMD EPYC in 31-33 on 2026-11-27.

    nice -n 10 python benchmarks/tuner_overhead.py --history 10000 --budget 256

With --sections it also prints the hot path's time per part of the tick (the driver's database phases; the strategy's
refit, annealing, sweeps, the GPs' picks, ...), from timers around those methods during the job.

Several --options (and --repeats) run one job each, in turn, over the same history: an interleaved comparison on a
shared host. Every job runs on one seed and starts as the first did (its workload's vectors dropped from the feature
cache, the class model left as fitted on the history):

    python benchmarks/tuner_overhead.py --options '{}' '{"gp_until": 0}' --repeats 3
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
import json
import math
import random
import statistics
import sys
import tempfile
import time
import zlib
from datetime import timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sqlalchemy import func, select  # noqa: E402

import compiler_core as cc  # noqa: E402
from tuner_server import repo  # noqa: E402
from tuner_server.class_models import ClassModels  # noqa: E402
from tuner_server.cost_model.feature_pool import FeaturePool  # noqa: E402
from tuner_server.cost_model.featurize import LoweredFeatures  # noqa: E402
from tuner_server.db import Trial, make_engine, make_session_factory, session_scope, upgrade_to_head  # noqa: E402
from tuner_server.db.models import JOB_OPEN_STATES  # noqa: E402
from tuner_server.db.types import utcnow  # noqa: E402
from tuner_server.driver import JobDriver  # noqa: E402
from tuner_server.gc_policy import tune_for_tuner  # noqa: E402
from tuner_server.repo import JobSpec, TrialReport  # noqa: E402
from tuner_server.repo.trials import append_trial  # noqa: E402
from tuner_server.settings import Settings  # noqa: E402
from tuner_server.targets import target_for_class  # noqa: E402

JOB_SEED = 1  # every job searches alike, so options are compared on the same path until they change it
FINGERPRINT = {"kind": "cpu", "model": "benchmark", "arch": "x86_64", "isa_flags": ["avx2", "fma"],
               "compute_units": 1, "memory_bytes": 8 << 30,
               "target": cc.cpu_target(isa="avx2", cores=1).to_dict()}  # what an agent registers with


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--history", type=int, default=10_000, help="trials of the device class already stored")
    p.add_argument("--shapes", default="256,256,256;512,256,128;128,512,384;384,192,256",
                   help="M,N,K of the history's matmul workloads, ';'-separated")
    p.add_argument("--job-shape", default="192,384,320", help="M,N,K of the benchmarked job")
    p.add_argument("--budget", type=int, default=256, help="trials of the benchmarked job")
    p.add_argument("--batch", type=int, default=8, help="tasks leased and reported per round")
    p.add_argument("--workers", type=int, default=2, help="feature pool processes")
    p.add_argument("--database-url", default=None, help="an empty database (default: a SQLite file in a temporary "
                                                         "directory)")
    p.add_argument("--sections", action="store_true", help="also print where the hot path's time goes (timers "
                                                           "around the strategy's parts; sections nest)")
    p.add_argument("--options", nargs="+", default=["{}"],
                   help="JSON strategy options of the benchmarked job (e.g. '{\"gp_until\": 0}' for the search "
                        "without its GP); several: one job each, in turn over the same history (interleaved)")
    p.add_argument("--repeats", type=int, default=1, help="rounds over --options (each a job of its own)")
    return p.parse_args(argv)


SECTIONS = (  # (module, class or None for a module's function, method, label): the tick's parts, indented as they nest
    ("tuner_server.driver", "JobDriver", "_sweep", "driver: expired leases and lost agents"),
    ("tuner_server.driver", "JobDriver", "_scan", "driver: open jobs and active agents"),
    ("tuner_server.driver", "JobDriver", "_read", "driver: the job's progress and new trials"),
    ("tuner_server.repo", None, "enqueue_configs", "driver: queueing the proposals"),
    ("tuner_server.search.model_guided", "ModelGuided", "propose", "strategy proposes"),
    ("tuner_server.search.model_guided", "ModelGuided", "_current_model", "  refit"),
    ("tuner_server.cost_model.ensemble", "Ensemble", "fit", "    the job's ensemble"),
    ("tuner_server.cost_model.model", "CostModel", "fine_tuned", "    class model fine-tuned on the job"),
    ("tuner_server.search.model_guided", "ModelGuided", "_explore", "  annealing"),
    ("tuner_server.search.model_guided", "ModelGuided", "_sweeps", "  basin sweeps"),
    ("tuner_server.search.model_guided", "ModelGuided", "_ranked", "  ranking the pool"),
    ("tuner_server.search.portfolio", "Portfolio", "picks", "  the GPs' picks"),
    ("tuner_server.search.portfolio", "Portfolio", "_fit", "    fitted GP's kernel"),
    ("tuner_server.search.portfolio", "Portfolio", "_smooth_picks", "    smooth GP"),
    ("tuner_server.search.listing", "UnseenDraws", "draw", "  random unseen draws (inside the above)"),
    ("tuner_server.search.model_guided", "ModelGuided", "observe", "strategy observes"),
)


class SectionTimers:
    """Wall time and calls of each of SECTIONS while installed (the methods are wrapped, then restored)."""

    def __init__(self):
        self.seconds, self.calls, self._restore = {}, {}, []

    def install(self) -> SectionTimers:
        for module, cls_name, method, label in SECTIONS:
            owner = importlib.import_module(module)  # the module itself, or its class
            owner = owner if cls_name is None else getattr(owner, cls_name)
            original = getattr(owner, method)
            self._restore.append((owner, method, original))
            setattr(owner, method, self._timed(original, label))
        return self

    def _timed(self, original, label):
        @functools.wraps(original)
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[label] = self.seconds.get(label, 0.0) + time.perf_counter() - t0
                self.calls[label] = self.calls.get(label, 0) + 1
        return timed

    def uninstall(self) -> None:
        for owner, method, original in self._restore:
            setattr(owner, method, original)
        self._restore = []

    def table(self, candidates: int) -> str:
        lines = ["| section | ms per candidate | calls |", "|---|---:|---:|"]
        for *_, label in SECTIONS:
            depth = (len(label) - len(label.lstrip())) // 2
            lines.append(f"| {'· ' * depth}{label.lstrip()} | {1e3 * self.seconds.get(label, 0.0) / candidates:.3f} | "
                         f"{self.calls.get(label, 0)} |")
        return "\n".join(lines)


def matmul(shape: str) -> cc.Workload:
    m, n, k = (int(v) for v in shape.split(","))
    return cc.make_workload("matmul", {"M": m, "N": n, "K": k})


def synthetic_runtime(workload: cc.Workload, config: dict) -> float | None:
    """A smooth function of the knobs (log2 of numbers, a per-value offset of the rest); None: a failure."""
    if zlib.crc32(cc.config_key(config).encode()) % 25 == 0:
        return None
    score = 0.0
    for name, value in sorted(config.items()):
        h = zlib.crc32(f"{workload.op}.{name}".encode())
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            score += ((h % 7) / 7 - 0.5) * (math.log2(max(value, 1)) - 2 - h % 3) ** 2 / 4
        else:
            score += (zlib.crc32(f"{name}={value}".encode()) % 100) / 400
    return 1e-3 * math.exp(score)


def populate(sessions, dclass: str, shapes: list[str], total: int) -> float:
    t0 = time.perf_counter()
    with session_scope(sessions) as s:
        target = target_for_class(dclass, session=s)
    start = utcnow() - timedelta(days=1)
    per_shape = math.ceil(total / len(shapes))
    n = 0
    for i, shape in enumerate(shapes):
        w = matmul(shape)
        configs = cc.get_space(w, target).sample(random.Random(i), per_shape)
        with session_scope(sessions) as s:
            workload = repo.get_or_create_workload(w.key, session=s)
            for config in configs[: total - n]:
                median = synthetic_runtime(w, config)
                append_trial(session=s, workload=workload, device_class=dclass, config=config,
                             codegen_version=cc.codegen_version(), status="OK" if median else "COMPILE_ERROR",
                             created_at=start + timedelta(milliseconds=n), median_s=median)
                n += 1
    return time.perf_counter() - t0


def python_loop_ms(runs: int = 3) -> float:
    """How fast this host runs plain Python now: the best of `runs` sums of a million squares, in ms, the loop of
    benchmarks/results/2026-11-27-overhead-hosts/host_speed.py (so its recorded figures share the scale). The hot path
    is mostly Python, so overheads of different hosts (or of one shared host at different times) compare by it."""
    best = math.inf
    for _ in range(runs):
        t0 = time.perf_counter()
        sum(i * i for i in range(10**6))
        best = min(best, time.perf_counter() - t0)
    return 1e3 * best


def keep_until_fitted(keeper: ClassModels, pool: FeaturePool, dclass: str) -> float:
    t0 = time.perf_counter()
    while True:
        summary = keeper.refresh()
        if dclass in summary.fitted:
            return time.perf_counter() - t0
        pool.wait()


def report(task, median: float | None) -> TrialReport:
    if median is None:
        return TrialReport(task.task_id, task.attempt, "COMPILE_ERROR", error="synthetic failure",
                           codegen_version=cc.codegen_version())
    return TrialReport(task.task_id, task.attempt, "OK", samples_s=(median,) * 3, median_s=median,
                       ci_low_s=median * 0.99, ci_high_s=median * 1.01, codegen_version=cc.codegen_version())


def run_job(sessions, driver: JobDriver, keeper: ClassModels, pool: FeaturePool, agent_id: str, dclass: str,
            args, options: dict) -> dict:
    w = matmul(args.job_shape)
    with session_scope(sessions) as s:
        job_id = repo.create_job(JobSpec(w.key, dclass, args.budget, strategy="model", strategy_options=options,
                                         seed=JOB_SEED), session=s).id
    ticks, tick_cpu, measured, refits = [], [], 0, []
    cpu0, fit0 = pool.worker_cpu_s, keeper.fit_s
    while measured < args.budget:
        t0, c0 = time.perf_counter(), time.process_time()
        driver.tick()
        ticks.append(time.perf_counter() - t0)
        tick_cpu.append(time.process_time() - c0)
        with session_scope(sessions) as s:
            leased = repo.lease_tasks(agent_id, args.batch, session=s)
            configs = {t.task_id: t.config for t in leased}
            for task in leased:
                result = report(task, synthetic_runtime(w, configs[task.task_id]))
                if task.kind == "COMPARE":  # a challenge: the candidate head to head with the head's config
                    baseline = synthetic_runtime(w, task.baseline_config) or 1.0
                    result = dataclasses.replace(result, baseline_samples_s=(baseline,) * len(result.samples_s))
                repo.record_result(agent_id, result, session=s)
        measured += sum(task.kind == "MEASURE" for task in leased)
        if not leased and len(ticks) > 3 * args.budget:
            raise SystemExit("the job stopped proposing before its budget")
        pool.wait()  # an agent's measurement of the batch takes at least this long
        fitted = keeper.refresh().fitted  # the keeper's thread would do this every few seconds
        if dclass in fitted:
            refits.append(fitted[dclass])
    with session_scope(sessions) as s:
        state = repo.get_job(job_id, session=s).state
        if state in JOB_OPEN_STATES:  # its final comparisons are not the search's hot path, nor the next job's
            repo.cancel_job(job_id, session=s)
    return {"candidates": measured, "ticks": ticks, "tick_cpu": tick_cpu, "state": state,
            "worker_cpu_s": pool.worker_cpu_s - cpu0,
            "refit_s": keeper.fit_s - fit0, "refits": refits}


def main(argv=None) -> None:
    args = parse_args(argv)
    tune_for_tuner()  # this process stands for the tuner's: its garbage collector is set as the tuner sets it
    loop_before_ms = python_loop_ms()
    tmp = tempfile.TemporaryDirectory(prefix="tunefarm-overhead-")
    url = args.database_url or f"sqlite:///{tmp.name}/tunefarm.db"
    upgrade_to_head(url)
    engine = make_engine(url)
    sessions = make_session_factory(engine)
    with session_scope(sessions) as s:
        stored = s.scalar(select(func.count()).select_from(Trial))
    if stored:  # its history would not be the one asked for, and a class model already fitted is never refitted
        raise SystemExit(f"--database-url: the database holds {stored} trials; this benchmark needs an empty one "
                         "(it writes the history it measures with)")
    with session_scope(sessions) as s:
        agent = repo.register_agent(FINGERPRINT, "benchmark", cc.codegen_version(), session=s).agent
        agent_id, dclass = agent.id, agent.device_class
    shapes = [x for x in args.shapes.split(";") if x]
    insert_s = populate(sessions, dclass, shapes, args.history)
    pool = FeaturePool(args.workers)
    keeper = ClassModels(sessions, pool=pool)
    first_s = keep_until_fitted(keeper, pool, dclass)
    history_cpu_s, first_fit_s = pool.worker_cpu_s, keeper.fit_s
    print(f"history: {args.history} trials of {len(shapes)} matmul shapes on {dclass} inserted in {insert_s:.1f} s; "
          f"featurized and fitted in {first_s:.0f} s ({args.workers} pool processes, "
          f"{history_cpu_s * 1e3 / args.history:.1f} ms worker CPU per trial); class model fit {first_fit_s:.2f} s",
          file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    keeper.refresh()  # a pass with nothing new: what the keeper's thread costs every few seconds
    idle_pass_s = time.perf_counter() - t0
    driver = JobDriver(sessions, Settings(database_url=url), class_models=keeper, feature_pool=pool,
                       min_queued=args.batch)
    # Jobs of one shape one after another, each as the first: its strategy sees only its own trials, the vectors the
    # earlier jobs' configs left in the feature cache are dropped before it starts, and the class model stays the one
    # fitted on the history (its refits are amortized apart, from the first fit).
    jobs = args.repeats * len(args.options)
    if jobs > 1:
        keeper.growth = math.inf
    with session_scope(sessions) as s:
        prefix = LoweredFeatures.cache_prefix(matmul(args.job_shape).key, target_for_class(dclass, session=s))
    print("| options | history trials | candidates | hot path ms/cand. | class refit amortized ms/cand. | tuner "
          "overhead ms/cand. | feature pool worker CPU ms/cand. | hot path CPU ms/cand. |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|", flush=True)
    amortized_ms = 1e3 * first_fit_s / (0.1 * args.history)  # a refit per 10 % growth of the class's trials
    for _ in range(args.repeats):
        for options in args.options:
            keeper.cache.forget(prefix)
            timers = SectionTimers().install() if args.sections else None
            try:
                r = run_job(sessions, driver, keeper, pool, agent_id, dclass, args, json.loads(options))
            finally:
                if timers is not None:
                    timers.uninstall()
            n = r["candidates"]
            hot_ms = 1e3 * sum(r["ticks"]) / n
            print(f"job {r['state']}: {n} candidates in {len(r['ticks'])} driver ticks (median tick "
                  f"{statistics.median(r['ticks']) * 1e3:.1f} ms, max {max(r['ticks']) * 1e3:.0f} ms); class-model "
                  f"refits during the job: {len(r['refits'])}; idle keeper pass over {args.history} trials: "
                  f"{idle_pass_s:.2f} s", file=sys.stderr)
            print(f"| {options} | {args.history} | {n} | {hot_ms:.2f} | {amortized_ms:.2f} | "
                  f"{hot_ms + amortized_ms:.2f} | {r['worker_cpu_s'] * 1e3 / n:.1f} | "
                  f"{1e3 * sum(r['tick_cpu']) / n:.2f} |", flush=True)
            if timers is not None:
                print("\n" + timers.table(n) + "\n", flush=True)
    print(f"host: a Python loop of 10^6 squares took {loop_before_ms:.1f} ms before the history and "
          f"{python_loop_ms():.1f} ms after the jobs (best of 3)", file=sys.stderr)
    pool.close()
    engine.dispose()
    tmp.cleanup()


if __name__ == "__main__":
    main()
