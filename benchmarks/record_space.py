"""Record a space table: every valid config of a workload (or a seeded sample), measured the way agents measure.

Each config is compiled by device_agent's build pool function (`prebuild`, in a process pool of --builders), then
verified and timed by device_agent's Sandbox (the isolated worker an agent runs), so compile, verify and measure are
exactly the farm's. Builds all finish before the first measurement, so compilers never share the CPU with a timing.
The table goes to benchmarks/data/<name>.json.gz (see tuner_server/replay.py for the format).

On a CPU shared with other work, pin the recording to one core (`taskset -c N`: the target then has one core and
kernels one thread, device class `cpu-...-1c`), since a multi-threaded kernel whose threads are descheduled waits at
every barrier and its timings stop saying anything about the schedule; `--passes 2` keeps each config's better run:

    taskset -c 1 nice -n 10 python benchmarks/record_space.py matmul M=256,N=256,K=256 --max 600 --passes 2
    python benchmarks/record_space.py matmul M=1024,N=1024,K=1024 --device cuda:0 --max 1000 --name gpu-matmul-1024
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import multiprocessing as mp
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import compiler_core as cc  # noqa: E402
from compiler_core.version import codegen_version  # noqa: E402
from device_agent.fingerprint import fingerprint, parse_device  # noqa: E402
from device_agent.prebuild import init_builder, prebuild  # noqa: E402
from device_agent.records import MeasureOptions, Status, Task, failed  # noqa: E402
from device_agent.sandbox import Sandbox  # noqa: E402
from device_agent.worker import WorkerSpec  # noqa: E402
from tuner_server import measure_policy  # noqa: E402
from tuner_server.device_class import device_class  # noqa: E402
from tuner_server.replay import save_table  # noqa: E402


def short_options(kind: str) -> MeasureOptions:
    """Short but stable timings (the farm's defaults with a bounded time per config): enough repeats for a median."""
    given = {"cpu": dict(min_repeats=5, min_time_s=0.02, max_repeats=40, max_time_s=1.0, timeout_s=20.0),
             "cuda": dict(min_repeats=10, min_time_s=0.01, max_repeats=100, max_time_s=0.5, timeout_s=20.0)}[kind]
    resolved = measure_policy.resolve(given, kind)
    return MeasureOptions(**{name: resolved[name] for name in measure_policy.AGENT_FIELDS})


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("op", help="operator name, e.g. matmul, softmax, conv2d")
    p.add_argument("params", help="workload parameters as k=v,k=v (e.g. M=256,N=256,K=256,dtype=float32)")
    p.add_argument("--device", default="cpu", help="'cpu' or 'cuda:N'")
    p.add_argument("--max", dest="max_configs", type=int, default=None,
                   help="measure a seeded uniform sample of this many valid configs (default: all of them)")
    p.add_argument("--seed", type=int, default=0, help="seed of the sample")
    p.add_argument("--builders", type=int, default=2, help="build processes")
    p.add_argument("--name", default=None, help="table name (default: <kind>-<op>-<params>)")
    p.add_argument("--out-dir", default=str(REPO / "benchmarks" / "data"))
    p.add_argument("--timeout", type=float, default=None, help="per-config timeout in seconds")
    p.add_argument("--passes", type=int, default=1,
                   help="measure every config this many times (a config keeps its fastest median)")
    return p.parse_args(argv)


def parse_params(text: str) -> dict:
    params = {}
    for item in filter(None, text.split(",")):
        key, _, value = item.partition("=")
        params[key.strip()] = int(value) if value.strip().lstrip("-").isdigit() else value.strip()
    return params


def target_for(device: str) -> cc.Target:
    kind, index = parse_device(device)
    if kind == "cpu":
        return cc.cpu_target()
    from compiler_core.runtime.cuda_runtime import device_target

    return device_target(index)


def choose_configs(space, max_configs: int | None, seed: int) -> list[dict]:
    if max_configs is None:
        return list(space)
    return space.sample(random.Random(seed), max_configs)


def build_all(tasks: list[Task], target: cc.Target, builders: int) -> list:
    """Every task's Prebuilt, compiled by the agents' own build function in a niced process pool."""
    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(max_workers=max(1, builders), mp_context=ctx, initializer=init_builder,
                             initargs=((),)) as pool:
        futures = [pool.submit(prebuild, t, target) for t in tasks]
        out = []
        for i, future in enumerate(futures):
            out.append(future.result())
            if (i + 1) % 50 == 0:
                print(f"  built {i + 1}/{len(tasks)}", file=sys.stderr, flush=True)
        return out


def measure_all(tasks: list[Task], built: list, device: str, passes: int = 1) -> list:
    """One result per task; with several passes (every other one in reverse order, so a burst of load on a shared
    machine hits different configs each time) a config keeps its fastest OK median."""
    sandbox = Sandbox(WorkerSpec(device))
    results: list = [None] * len(tasks)
    try:
        for p in range(passes):
            order = range(len(tasks)) if p % 2 == 0 else range(len(tasks) - 1, -1, -1)
            for done, i in enumerate(order, 1):
                task, pre = tasks[i], built[i]
                result = failed(task, pre.status, pre.error) if pre.status is not None else \
                    sandbox.run(task, pre.cubins, pre.compile_s)
                results[i] = better(results[i], result)
                if done % 100 == 0:
                    print(f"  pass {p + 1}: measured {done}/{len(tasks)}", file=sys.stderr, flush=True)
    finally:
        sandbox.close()
    return results


def better(old, new):
    if old is None or (new.status == Status.OK and (old.status != Status.OK or new.median_s < old.median_s)):
        return new
    return old


def record(args: argparse.Namespace) -> Path:
    kind, _ = parse_device(args.device)
    workload = cc.make_workload(args.op, parse_params(args.params))
    target = target_for(args.device)
    configs = choose_configs(cc.get_space(workload, target), args.max_configs, args.seed)
    options = short_options(kind)
    options = options if args.timeout is None else dataclasses.replace(options, timeout_s=args.timeout)
    tasks = [Task(f"t{i}", 1, "record", workload.key, cc.config_key(c), options) for i, c in enumerate(configs)]
    print(f"{workload.key} on {args.device}: {len(tasks)} configs", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    built = build_all(tasks, target, args.builders)
    t1 = time.perf_counter()
    results = measure_all(tasks, built, args.device, args.passes)
    t2 = time.perf_counter()
    meta = {"op": workload.op, "params": workload.param_dict, "workload_key": workload.key,
            "device": fingerprint(args.device)["model"], "device_class": device_class(fingerprint(args.device)),
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "codegen_version": codegen_version(), "target": target.to_dict(),
            "measure": dataclasses.asdict(options), "sampled": args.max_configs is not None, "seed": args.seed,
            "passes": args.passes,
            "build_s": round(t1 - t0, 1), "measure_s": round(t2 - t1, 1)}
    trials = [{"config": c, "median_s": r.median_s if r.status == Status.OK else None, "status": str(r.status)}
              for c, r in zip(configs, results, strict=True)]
    name = args.name or f"{kind}-{workload.op}-" + "-".join(str(v) for _, v in workload.params)
    path = save_table(Path(args.out_dir) / f"{name}.json.gz", meta, trials)
    ok = [t["median_s"] for t in trials if t["status"] == "OK"]
    print(f"wrote {path}: {len(ok)}/{len(trials)} OK, best {min(ok) * 1e3 if ok else float('nan'):.4f} ms, "
          f"build {t1 - t0:.0f} s, measure {t2 - t1:.0f} s", file=sys.stderr)
    return path


if __name__ == "__main__":
    record(parse_args())
