"""Is the stored head true? N independent tunings in fresh embedded farms, then a re-measurement in a fresh process.

For each run: a fresh data directory and `tunefarm up`-style farm (tuner + one CPU agent, SQLite), one job
(`--trials`, seed = run), and what the farm reports: the head's config, the job's head-to-head result (its ratio
to numpy with the paired CI) and the configs of the job's 5 fastest trials. Then, in a fresh process that played
no part in the tuning, it re-measures with the agent's own timer (pinned cores, host lock, cache flush, interleaved
rounds):

- per run: the head against the run's 5 fastest trials, all interleaved: head time / fastest of them (1.00 when the
  head is the fastest; the farm's promise is <= 1.05);
- per run: numpy interleaved with the head: its ratio, beside the ratio the job reported;
- across runs: every run's head interleaved: max / min of their medians (the tunings' consistency).

Nothing here asserts a time. Results go to stdout and, with --out, to a markdown file.

    python3 benchmarks/head_stability.py --runs 5 --op matmul --params M=1024,N=1024,K=1024,dtype=float32
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import compiler_core as cc  # noqa: E402
from compiler_core.stats import summarize  # noqa: E402
from compiler_core.workload import parse_params  # noqa: E402

TOP = 5


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--op", default="matmul")
    p.add_argument("--params", default="M=1024,N=1024,K=1024,dtype=float32")
    p.add_argument("--trials", type=int, default=64)
    p.add_argument("--rounds", type=int, default=41, help="interleaved rounds of the re-measurement")
    p.add_argument("--out", default=None, help="also write the markdown report here")
    p.add_argument("--remeasure", default=None, help=argparse.SUPPRESS)  # internal: the fresh process
    return p.parse_args(argv)


def tune(run: int, args) -> dict:
    from tunefarm_cli.embedded import EmbeddedFarm
    from tunefarm_client.client import TunefarmClient

    w = cc.make_workload(args.op, parse_params(args.params))
    with tempfile.TemporaryDirectory(prefix="tunefarm-stability-") as tmp, \
            EmbeddedFarm(Path(tmp), devices=["cpu"]) as farm, TunefarmClient(farm.url, farm.admin_token) as client:
        job = client.create_job(args.op, w.param_dict, "cpu", args.trials, seed=run)
        t0 = time.monotonic()
        while job.state not in ("done", "failed", "cancelled"):
            time.sleep(2.0)
            job = client.job(job.id)
            p = job.progress
            print(f"\r  run {run}: {p.completed}/{p.trial_budget} trials, phase {job.phase}, "
                  f"{time.monotonic() - t0:.0f} s", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
        if job.state != "done" or job.result is None:
            raise RuntimeError(f"run {run}: job {job.state} {job.error or ''}")
        best = client.best(args.op, w.param_dict, job.device_class)
        ok = [t for t in client.job_trials(job.id, status="OK", limit=args.trials + 1).items if t.median_s]
        top, seen = [], set()
        for t in sorted(ok, key=lambda t: t.median_s):
            if cc.config_key(t.config) not in seen and len(top) < TOP:
                seen.add(cc.config_key(t.config))
                top.append(t.config)
        r = job.result
        return {"run": run, "workload": w.key, "device_class": job.device_class, "head": best.config,
                "head_version": best.version, "top": top, "reported_head_s": r.head_median_s,
                "reference": r.reference, "reported_vs_reference": r.speedup_vs_reference.model_dump()
                if r.speedup_vs_reference else None, "comparisons": r.comparisons, "seconds": time.monotonic() - t0}


def remeasure(path: str, rounds: int) -> None:
    """The fresh process: time heads, top trials and numpy with the agent's bench; print JSON to stdout."""
    from device_agent.affinity import available_cpus
    from device_agent.benches import CpuBench
    from device_agent.records import MeasureOptions
    from device_agent.workload_data import WorkloadCache

    runs = json.loads(Path(path).read_text())
    bench = CpuBench(available_cpus(), "/tmp")
    cache = WorkloadCache(None)
    opts = MeasureOptions(warmup=2, min_repeats=rounds, min_time_s=0.0, max_repeats=rounds, timeout_s=3600,
                          flush_cache=True, max_time_s=3600, target_rel_ci=1.0, max_contention=1.0)
    w = cc.parse_key(runs[0]["workload"])
    data = cache.get(w, 0)

    def medians(configs, with_numpy=False):
        fns = [bench.timed(bench.build(w, c), data) for c in configs]
        if with_numpy:
            fns.append(bench.baseline(data))
        with bench.lock.hold(3600):
            bench.meter.start()
            sampling = bench.sample(fns, opts)
            contention = bench.meter.stop()
        return [summarize(s)[0] for s in sampling.series], sampling.series, contention

    out = {"per_run": [], "threads": bench.threads, "cpus": bench.cpus}
    for r in runs:
        meds, series, contention = medians([r["head"], *r["top"]])
        (head_s, numpy_s), pair, _ = medians([r["head"]], with_numpy=True)
        ratio = summarize([b / a for a, b in zip(pair[0], pair[1], strict=True)])
        out["per_run"].append({"run": r["run"], "head_s": meds[0], "fastest_top_s": min(meds[1:]),
                               "head_over_fastest": meds[0] / min(meds[1:]), "numpy_over_head": list(ratio),
                               "contention": contention})
    meds, _, contention = medians([r["head"] for r in runs])
    out["heads_s"], out["heads_max_over_min"], out["heads_contention"] = meds, max(meds) / min(meds), contention
    print(json.dumps(out))


def report(args, runs: list[dict], fresh: dict) -> str:
    w = cc.parse_key(runs[0]["workload"])
    flops = cc.get_op(w.op).flops(w)
    lines = [f"# Head stability: {w.key}, {len(runs)} tunings of {args.trials} trials",
             "", f"{datetime.date.today().isoformat()}, {platform.processor() or platform.machine()}, "
             f"{runs[0]['device_class']}; re-measured in a fresh process on cores {fresh['cpus']} "
             f"({fresh['threads']} threads), {args.rounds} interleaved rounds, cache flushed before every sample.",
             "", "| run | head v | head ms (fresh) | GFLOP/s | head / fastest of top 5 | numpy/head reported "
             "[95% CI] | numpy/head fresh [95% CI] | final comparisons | tuning s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r, f in zip(runs, fresh["per_run"], strict=True):
        rep = r["reported_vs_reference"]
        rep_text = f"{rep['ratio']:.2f} [{rep['ci_low']:.2f}, {rep['ci_high']:.2f}]" if rep else "-"
        n = f["numpy_over_head"]
        lines.append(f"| {r['run']} | {r['head_version']} | {f['head_s'] * 1e3:.3f} | "
                     f"{flops / f['head_s'] / 1e9:.1f} | "
                     f"{f['head_over_fastest']:.3f} | {rep_text} | {n[0]:.2f} [{n[1]:.2f}, {n[2]:.2f}] | "
                     f"{r['comparisons']} | {r['seconds']:.0f} |")
    lines += ["", f"All heads interleaved: medians {', '.join(f'{s * 1e3:.3f}' for s in fresh['heads_s'])} ms; "
              f"max/min = **{fresh['heads_max_over_min']:.3f}** (contention {fresh['heads_contention']:.2f})."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.remeasure:
        remeasure(args.remeasure, args.rounds)
        return 0
    runs = []
    for run in range(args.runs):
        runs.append(tune(run, args))
        print(f"run {run}: head v{runs[-1]['head_version']} {runs[-1]['head']}", file=sys.stderr)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(runs, f)
    print("re-measuring in a fresh process ...", file=sys.stderr)
    from device_agent.baselines import QUIET_REFERENCE_ENV  # the agent's workers start with it too

    done = subprocess.run([sys.executable, __file__, "--remeasure", f.name, "--rounds", str(args.rounds)],
                          capture_output=True, text=True, check=True, env={**os.environ, **QUIET_REFERENCE_ENV})
    text = report(args, runs, json.loads(done.stdout.strip().splitlines()[-1]))
    print(text)
    if args.out:
        Path(args.out).write_text(text)
        Path(args.out).with_suffix(".json").write_text(json.dumps(runs, indent=1))  # heads and top configs
    return 0


if __name__ == "__main__":
    sys.exit(main())
