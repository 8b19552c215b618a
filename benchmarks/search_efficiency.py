"""Search efficiency: how many measurements each strategy needs to get within 5 % of a space's optimum.

Every strategy runs against every space, once per seed, with the job driver's loop (propose a batch, measure it,
observe) and no hardware (tuner_server.replay). The spaces: the recorded tables in benchmarks/data (ours, and Kernel
Tuner caches converted by benchmarks/fetch_kernel_tuner_caches.py), and the seeded synthetic spaces of
tuner_server.synthetic_spaces (needles, many basins, invalid regions, noisy timings). "ga" and "bo" are the reference
strategies (Kernel Tuner's genetic algorithm and Bayesian optimisation, re-implemented; BO scores every unmeasured
config each round as Kernel Tuner's does, unless `--bo-sample N` gives it the farm's bounded-cost sample of N);
"model+transfer" starts from a cost model trained on the other tables of the same op and device class (the model a
farm keeps), "model" from nothing.

For each (space, strategy): the median over seeds of the measurements needed to reach 5 % of the optimum (a run that
never does counts as budget + 1; '>B' when the median is such a run), the fraction of seeds that reach it within the
budget, and the median best/optimum after 100 measurements. The last column checks the model strategy against the
best of ga and bo on each of the three (median <=, fraction >=, best@100 <=) and the closing line lists the spaces
where it does not hold. Beside each median and fraction stands its 90 % interval over seeds (a bootstrap of the
median, Wilson's interval of the fraction): a loss within those intervals is marked "(within spread)", since other
seeds could reverse it, and the closing line names the spaces with a loss beyond them. With 10 seeds or more a last
line gives the bar's noise floor: the seeds are split in halves, and each strategy's second half is checked against
the first half of GA and BO; BO against a replicate of itself fails wherever chance goes against it (with 40 seeds it
passed on 17 of 33 spaces, the model strategy on 30). With 10 seeds or more a strategy also gets rank tests: per space,
a one-sided Mann-Whitney U test of its measurements to 5 % against each reference's (misses count as budget + 1),
the smallest p that it is slower in the last column, and a closing line naming the spaces where it is slower at
p < 0.05, those that stay so after Holm's correction over all spaces tested, and how many it is faster than both on.
The medians' bar asks more than a test can show: on 41 spaces at 40 seeds, BO against its own replicate met it on 21.
`--strategies '' --reuse
FILE` prints the table of an earlier --json file again. With `--checkpoint FILE` every finished run is appended to
FILE (JSON lines) as it ends, and runs already there are not run again: a run cut short (a time limit, Ctrl-C) goes
on where it stopped when the same command is given again.

    nice -n 10 python benchmarks/search_efficiency.py --seeds 20 --jobs 2
"""
from __future__ import annotations

import argparse
import contextlib
import glob
import json
import math
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from scipy.stats import mannwhitneyu

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # one core per run: parallel BLAS
    os.environ.setdefault(_var, "1")  # threads only fight each other (and --jobs) on a shared host

from tuner_server.cost_model import lowered_featurizers, shared_cache, train_on_trials  # noqa: E402
from tuner_server.cost_model.featurize import FEATURE_NAMES  # noqa: E402
from tuner_server.replay import ReplayTable, load_table, run_strategy  # noqa: E402
from tuner_server.synthetic_spaces import FRESH, HELD_OUT, PRESETS, spec_from_name, synthetic_table  # noqa: E402

STRATEGIES = ("random", "grid", "ga", "bo", "model", "model+transfer")
REFERENCES = ("ga", "bo")
TOLERANCE = 0.05
AT = 100
LEVEL = 0.9  # of the intervals reported beside medians and fractions
RESAMPLES = 2000
WITHIN = " (within spread)"
ALPHA = 0.05  # the significance level of the rank tests against the references
MIN_TESTED = 10  # seeds of each strategy at least before a rank test is reported


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tables", default=str(REPO / "benchmarks" / "data" / "*.json.gz"),
                   help="glob of recorded tables ('' for none)")
    p.add_argument("--synthetic", default="all",
                   help="comma-separated synthetic spaces by name (a preset's, or any synth-KIND-<N>k<knobs>-s<seed>: "
                        "N thousand configs) or group: 'all' (the presets), 'held-out' or 'fresh' (spaces kept apart "
                        "from tuning the defaults), 'every' (the three sets) or 'none'")
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--batch", type=int, default=8, help="configs proposed per round (the farm's queue refill)")
    p.add_argument("--budget", type=int, default=400, help="measurements per run, at most the space's size")
    p.add_argument("--strategies", default=",".join(STRATEGIES))
    p.add_argument("--options", default="{}", help="JSON options for the model strategy")
    p.add_argument("--bo-sample", type=int, default=0,
                   help="configs the BO reference scores per round: 0 (default) every unmeasured config, as Kernel "
                        "Tuner's BO does; N a uniform sample of N (the farm's bounded-cost default is 2048; the "
                        "results files before 2026-11-27's faithful BO ran with 2048)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (runs are independent)")
    p.add_argument("--json", dest="json_out", default=None, help="write every run's figures here")
    p.add_argument("--reuse", default=None,
                   help="a --json file of an earlier run (same seeds, budget and batch): its runs of strategies not "
                        "in --strategies are reported beside the new ones (e.g. the reference strategies, unchanged)")
    p.add_argument("--checkpoint", default=None,
                   help="JSON-lines file: each finished run is appended as it ends, and runs already in it (of the "
                        "same seeds, budget, batch and options) are reported without running them again")
    args = p.parse_args(argv)
    if args.bo_sample < 0:
        p.error(f"--bo-sample {args.bo_sample}: give 0 (every unmeasured config) or a positive count")
    return args


def reach(observed, optimum: float, tolerance: float = TOLERANCE) -> int | None:
    """Measurements until the best OK runtime is within `tolerance` of the optimum (None: never, in the run)."""
    best = math.inf
    for i, o in enumerate(observed, 1):
        if o.status == "OK" and o.median_s is not None:
            best = min(best, o.median_s)
        if best <= optimum * (1 + tolerance):
            return i
    return None


def best_after(observed, optimum: float, n: int) -> float:
    times = [o.median_s for o in observed[:n] if o.status == "OK" and o.median_s is not None]
    return min(times) / optimum if times else math.inf


def transfer_model(table: ReplayTable, tables: list[ReplayTable], seed: int = 0):
    """A model trained on the other tables of the same op, device class and target (None if there are none)."""
    others = [t for t in tables if t is not table and t.meta.get("op") == table.meta.get("op")
              and t.meta.get("device_class") == table.meta.get("device_class")
              and t.meta.get("target") == table.meta.get("target") and t.workload_key is not None]
    if not others or table.workload_key is None:
        return None, []
    trials = [trial for t in others for trial in t.transfer_trials()]
    model = train_on_trials(trials, FEATURE_NAMES, lowered_featurizers(table.target(), shared_cache()), seed=seed)
    return (model if model.trained else None), [t.meta["name"] for t in others]


_SPACES: dict[str, ReplayTable] = {}  # per process: tables loaded or built once
_TRANSFER: dict[str, object] = {}


def load_spaces(args) -> dict[str, ReplayTable]:
    paths = sorted(glob.glob(args.tables)) if args.tables else []
    tables = [t for t in map(load_table, paths) if t.optimum is not None]
    known = PRESETS | HELD_OUT | FRESH
    groups = {"all": list(PRESETS), "held-out": list(HELD_OUT), "fresh": list(FRESH),
              "every": [*PRESETS, *HELD_OUT, *FRESH], "none": []}
    items = [n.strip() for n in args.synthetic.split(",") if n.strip()]
    names = list(dict.fromkeys(name for item in items for name in groups.get(item, [item])))  # groups expanded
    specs, wrong = [], []
    for name in names:
        try:
            specs.append(known[name] if name in known else spec_from_name(name))
        except ValueError as e:
            wrong.append(str(e))
    if wrong:
        raise SystemExit(f"--synthetic: {'; '.join(wrong)}. Presets: {', '.join(known)}; groups: {', '.join(groups)}")
    tables += [synthetic_table(spec) for spec in specs]
    return {t.meta["name"]: t for t in tables}


def _init(args) -> None:
    _SPACES.update(load_spaces(args))
    if "model+transfer" in args.strategies:
        for name, table in _SPACES.items():
            _TRANSFER[name] = transfer_model(table, list(_SPACES.values()))[0]


def run_one(task: tuple[str, str, int], args) -> dict:
    name, strategy, seed = task
    table = _SPACES[name]
    budget = min(args.budget, len(table))
    base = strategy.removesuffix("+transfer")
    options = json.loads(args.options) if base == "model" else {}
    if base == "bo":
        options = {"candidates": args.bo_sample or len(table)}
    t0 = time.perf_counter()
    observed = run_strategy(table, base, budget, seed=seed, batch=args.batch, options=options,
                            cost_model=_TRANSFER.get(name) if strategy == "model+transfer" else None)
    optimum = table.optimum
    return {"space": name, "strategy": strategy, "seed": seed, "measured": len(observed),
            "to_5pct": reach(observed, optimum), f"best_at_{AT}": best_after(observed, optimum, AT),
            "wall_s": time.perf_counter() - t0}


def _run_in_worker(task, args) -> dict:
    if not _SPACES:
        _init(args)
    return run_one(task, args)


def _capped(steps: list[int | None], cap: int) -> list[int]:
    """Measurements to 5 % per run, a run that never got there counting as cap + 1."""
    return [s if s is not None else cap + 1 for s in steps]


def median_steps(steps: list[int | None], cap: int) -> float:
    """The median of measurements to 5 % (see `_capped`)."""
    return statistics.median(_capped(steps, cap))


def median_interval(steps: list[int | None], cap: int, level: float = LEVEL) -> tuple[float, float]:
    """The interval of that median over seeds (see `bootstrap_interval`)."""
    return bootstrap_interval(_capped(steps, cap), level)


def bootstrap_interval(values: list[float], level: float = LEVEL) -> tuple[float, float]:
    """The percentile-bootstrap interval of the median of per-seed values (seeded: the same runs give the same
    interval): how far the median could move with other seeds."""
    values = np.asarray(values, dtype=np.float64)
    resampled = np.random.default_rng(0).choice(values, size=(RESAMPLES, len(values)), replace=True)
    medians = np.median(resampled, axis=1)
    # the bounds are resampled medians themselves (no interpolation between them): values a median can take
    return (float(np.quantile(medians, (1 - level) / 2, method="lower")),
            float(np.quantile(medians, (1 + level) / 2, method="higher")))


def fraction_interval(hits: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Wilson's score interval of a fraction of seeds."""
    z = statistics.NormalDist().inv_cdf((1 + level) / 2)
    p, shrink = hits / n, 1 + z * z / n
    centre = (p + z * z / (2 * n)) / shrink
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / shrink
    return (0.0 if hits == 0 else centre - half), (1.0 if hits == n else centre + half)  # exact at the ends


def summary_row(runs: list[dict], cap: int) -> dict:
    steps = [r["to_5pct"] for r in runs]
    hits = sum(s is not None for s in steps)
    best_at = [r[f"best_at_{AT}"] for r in runs]
    return {"median": median_steps(steps, cap), "median_ci": median_interval(steps, cap),
            "reached": hits / len(runs), "reached_ci": fraction_interval(hits, len(runs)),
            "best_at": statistics.median(best_at), "best_at_ci": bootstrap_interval(best_at),
            "wall_s": statistics.median(r["wall_s"] for r in runs)}


def verdict(model: dict, refs: list[dict]) -> tuple[bool, str]:
    """Whether the model strategy is at least as good as the best reference on all three figures; a loss whose
    intervals overlap the reference's is marked `(within spread)`: other seeds could reverse it."""
    if not refs:
        return True, ""
    problems = []
    best = min(refs, key=lambda r: r["median"])
    if model["median"] > best["median"]:
        problems.append("median" + (WITHIN if model["median_ci"][0] <= best["median_ci"][1] else ""))
    most = max(refs, key=lambda r: r["reached"])
    if model["reached"] < most["reached"]:
        problems.append("reached" + (WITHIN if model["reached_ci"][1] >= most["reached_ci"][0] else ""))
    closest = min(refs, key=lambda r: r["best_at"])
    if model["best_at"] > closest["best_at"] + 1e-12:
        problems.append(f"@{AT}" + (WITHIN if model["best_at_ci"][0] <= closest["best_at_ci"][1] + 1e-12 else ""))
    return not problems, "ok" if not problems else "worse: " + ", ".join(problems)


def slower_p(model: list[dict], ref: list[dict], cap: int, alternative: str = "greater") -> float:
    """One-sided Mann-Whitney U p-value that the model's measurements to 5 % run larger than the reference's (a run
    that never gets there counts as cap + 1, so reach is in it too); `alternative` "less": that they run smaller."""
    a, b = _capped([r["to_5pct"] for r in model], cap), _capped([r["to_5pct"] for r in ref], cap)
    if len(set(a) | set(b)) == 1:
        return 1.0  # every run the same: no evidence either way
    return float(mannwhitneyu(a, b, alternative=alternative).pvalue)


def rank_tests(model: list[dict], refs: dict[str, list[dict]], cap: int) -> dict | None:
    """The model against each reference: the smallest p that it is slower (and which reference), and the largest p
    that it is faster (faster than both takes both); None with fewer than MIN_TESTED seeds on a side."""
    if len(model) < MIN_TESTED or any(len(runs) < MIN_TESTED for runs in refs.values()) or not refs:
        return None
    slower = {name: slower_p(model, runs, cap) for name, runs in refs.items()}
    worst = min(slower, key=slower.get)
    return {"slower_p": slower[worst], "slower_than": worst,
            "faster_p": max(slower_p(model, runs, cap, "less") for runs in refs.values())}


def summarize(rows: list[dict], spaces: dict[str, ReplayTable], budget: int) -> tuple[str, list[str], int, dict]:
    """The table, the spaces where the model strategy lost (with the verdict), how many spaces had the model and a
    reference to compare it with, and the model's rank tests per space (`rank_tests`)."""
    level = f"{LEVEL:.0%}"
    lines = [f"| space | configs | strategy | meas. to 5 % (median [{level} interval]) | seeds reaching 5 % "
             f"[{level}] | best/opt @{AT} | s/run | model vs best of GA, BO | p slower (ref) |",
             "|---|---:|---|---:|---:|---:|---:|---|---:|"]
    failing, compared, tests = [], 0, {}
    for name, table in spaces.items():
        cap = min(budget, len(table))
        here = {}
        for strategy in dict.fromkeys(r["strategy"] for r in rows if r["space"] == name):
            here[strategy] = [r for r in rows if r["space"] == name and r["strategy"] == strategy]
        figures = {strategy: summary_row(runs, cap) for strategy, runs in here.items()}
        refs = [figures[s] for s in REFERENCES if s in figures]
        compared += bool(refs) and "model" in figures
        for strategy, f in figures.items():
            check, tested = "", None
            if strategy.startswith("model"):
                good, check = verdict(f, refs)
                if not good and strategy == "model":
                    failing.append((name, check))
                tested = rank_tests(here[strategy], {s: here[s] for s in REFERENCES if s in here}, cap)
                if tested is not None and strategy == "model":
                    tests[name] = tested
            median, low, high = (f">{cap}" if v > cap else f"{v:g}" for v in (f["median"], *f["median_ci"]))
            reached = f"{f['reached']:.2f} [{f['reached_ci'][0]:.2f}, {f['reached_ci'][1]:.2f}]"
            p = f"{tested['slower_p']:.3f} ({tested['slower_than']})" if tested else ""
            lines.append(f"| {name} | {len(table)} | {strategy} | {median} [{low}, {high}] | {reached} | "
                         f"{f['best_at']:.3f} | {f['wall_s']:.2f} | {check} | {p} |")
    return "\n".join(lines), failing, compared, tests


def holm(pvalues: dict[str, float], alpha: float = ALPHA) -> list[str]:
    """The names whose p-values stay below `alpha` under Holm's step-down correction for testing all of them."""
    kept = []
    for i, (name, p) in enumerate(sorted(pvalues.items(), key=lambda item: item[1])):
        if p > alpha / (len(pvalues) - i):
            break
        kept.append(name)
    return kept


def significance_line(tests: dict[str, dict]) -> str:
    """The rank tests over all spaces: where the model is slower than GA or BO at p < ALPHA, where that survives
    Holm's correction over the spaces, and where it is faster than both; with identical strategies about ALPHA of
    the spaces (up to twice that, two references) would be called slower by chance."""
    if not tests:
        return ""
    slower = {name: t["slower_p"] for name, t in tests.items()}
    flagged = sorted((name for name, p in slower.items() if p < ALPHA), key=slower.get)
    faster = [name for name, t in tests.items() if t["faster_p"] < ALPHA]
    named = ", ".join(f"{name} {slower[name]:.3f} ({tests[name]['slower_than']})" for name in flagged)
    return (f"rank tests (one-sided Mann-Whitney U on measurements to 5 %, misses as budget + 1): model slower than "
            f"GA or BO at p < {ALPHA:g} on {len(flagged)} of {len(tests)} spaces{': ' + named if named else ''}; "
            f"after Holm's correction over the {len(tests)}: {', '.join(holm(slower)) or 'none'}; "
            f"faster than both at p < {ALPHA:g} on {len(faster)}")


def closing_line(failing: list[tuple[str, str]], spaces: int) -> str:
    """How many of the `spaces` where the model strategy met a reference it holds its own on; of the others, those
    where other seeds could not reverse a loss (a figure worse beyond the spread)."""
    if not spaces:
        return "no space has runs of the model strategy and of GA or BO to compare"
    line = f"model at least as good as the best of GA and BO on {spaces - len(failing)} of {spaces} spaces"
    if failing:
        line += f"; not on: {', '.join(name for name, _ in failing)}"
        clear = [name for name, check in failing
                 if any(WITHIN not in part for part in check.removeprefix("worse: ").split(", "))]
        line += f"; beyond the {LEVEL:.0%} spread on: {', '.join(clear) if clear else 'none'}"
    return line


MIN_HALF = 5  # seeds in each half at least before the replicate check means anything


def replicate_check(rows: list[dict], spaces: dict[str, ReplayTable], budget: int) -> str:
    """The bar's noise floor: with the seeds split in halves, on how many spaces each strategy's second half is at
    least as good as the first half of GA and BO (by `verdict`). A strategy checked against a replicate of itself
    passes only where chance favours it, so BO's own count says how many spaces the bar can fail on by chance."""
    seeds = sorted({r["seed"] for r in rows})
    if len(seeds) < 2 * MIN_HALF:
        return ""
    first = set(seeds[:len(seeds) // 2])
    counts: dict[str, list[int]] = {}
    for name, table in spaces.items():
        cap = min(budget, len(table))
        here = [r for r in rows if r["space"] == name]
        refs = [summary_row(half, cap) for s in REFERENCES
                if (half := [r for r in here if r["strategy"] == s and r["seed"] in first])]
        if len(refs) < len(REFERENCES):
            continue
        for strategy in dict.fromkeys(r["strategy"] for r in here):
            second = [r for r in here if r["strategy"] == strategy and r["seed"] not in first]
            if second:
                tally = counts.setdefault(strategy, [0, 0])
                tally[0] += verdict(summary_row(second, cap), refs)[0]
                tally[1] += 1
    if not counts:
        return ""
    return (f"replicates (seeds {seeds[0]}-{max(first)} of GA and BO against the other seeds of each strategy): "
            + ", ".join(f"{s} at least as good on {good} of {n}" for s, (good, n) in counts.items()))


def reused_runs(args, spaces: set[str], strategies: set[str]) -> list[dict]:
    """Runs of other strategies from an earlier --json file; it must have run with the same seeds, budget and batch."""
    earlier = json.loads(Path(args.reuse).read_text())
    for name in ("seeds", "budget", "batch"):
        if earlier["args"][name] != getattr(args, name):
            raise SystemExit(f"--reuse {args.reuse}: it ran with --{name} {earlier['args'][name]}, this run with "
                             f"{getattr(args, name)}; reuse needs the same seeds, budget and batch")
    runs = [r for r in earlier["runs"] if r["space"] in spaces and r["strategy"] not in strategies]
    sample = earlier["args"].get("bo_sample", EARLIER_BO_SAMPLE)
    if sample != args.bo_sample and any(r["strategy"] == "bo" for r in runs):
        raise SystemExit(f"--reuse {args.reuse}: its BO runs scored {_sample_text(sample)} per round, this command's "
                         f"{_sample_text(args.bo_sample)}; give --bo-sample {sample} to reuse them")
    return runs


def _sample_text(sample: int) -> str:
    return f"a sample of {sample}" if sample else "every unmeasured config"


EARLIER_BO_SAMPLE = 2048  # what the BO reference scored per round in --json files written before --bo-sample
CHECKPOINTED = ("seeds", "budget", "batch", "options", "bo_sample")  # what runs of a checkpoint share with this command


def checkpointed_runs(args) -> list[dict]:
    """The runs of --checkpoint (none when it does not exist yet); it must have been written with the same seeds,
    budget, batch, options and BO sample. A new file starts with a line of those settings."""
    path = Path(args.checkpoint)
    settings = {name: getattr(args, name) for name in CHECKPOINTED}
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    if not lines:
        path.write_text(json.dumps({"settings": settings}) + "\n")
        return []
    if lines[0].get("settings") != settings:
        raise SystemExit(f"--checkpoint {path}: written with {lines[0].get('settings')}, this command has "
                         f"{settings}; use another file or the same settings")
    return lines[1:]


def _with_progress(runs, total: int, t0: float, checkpoint: str | None = None) -> list[dict]:
    """Collect the runs (appending each to `checkpoint` as it ends), telling stderr how far along it is about every
    5 %."""
    rows, step = [], max(1, total // 20)
    with open(checkpoint, "a") if checkpoint else contextlib.nullcontext() as sink:
        for row in runs:
            rows.append(row)
            if sink is not None:
                sink.write(json.dumps(row) + "\n")
                sink.flush()
            if len(rows) % step == 0 or len(rows) == total:
                print(f"  {len(rows)}/{total} runs, {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    return rows


def main(argv=None) -> None:
    args = parse_args(argv)
    spaces = load_spaces(args)
    if not spaces:
        raise SystemExit("no spaces: --tables matched nothing and --synthetic is none")
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    tasks = []
    for name, table in spaces.items():
        print(f"{name}: {len(table)} configs, {len(table.space.knobs)} knobs, optimum "
              f"{table.optimum * 1e3:.4f} ms", file=sys.stderr, flush=True)
        for strategy in strategies:
            if strategy == "model+transfer" and table.workload_key is None:
                continue  # nothing to transfer from: foreign and synthetic tables
            seeds = [0] if strategy == "grid" else range(args.seeds)  # grid search ignores the seed
            tasks += [(name, strategy, seed) for seed in seeds]
    done: dict[tuple, dict] = {}  # this command's runs already in the checkpoint (the first of any repeats)
    if args.checkpoint:
        wanted = set(tasks)
        for r in checkpointed_runs(args):
            if (key := (r["space"], r["strategy"], r["seed"])) in wanted:
                done.setdefault(key, r)
        tasks = [task for task in tasks if task not in done]
        print(f"{len(done)} runs from {args.checkpoint}, {len(tasks)} to go", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    if args.jobs > 1 and tasks:
        with ProcessPoolExecutor(args.jobs) as pool:
            rows = _with_progress(pool.map(_run_in_worker, tasks, [args] * len(tasks), chunksize=4), len(tasks), t0,
                                  args.checkpoint)
    else:
        _SPACES.update(spaces)
        if "model+transfer" in strategies and tasks:
            _TRANSFER.update({n: transfer_model(t, list(spaces.values()))[0] for n, t in spaces.items()})
        rows = _with_progress((run_one(task, args) for task in tasks), len(tasks), t0, args.checkpoint)
    rows = list(done.values()) + rows
    if args.reuse:
        rows = reused_runs(args, set(spaces), set(strategies)) + rows
    table, failing, compared, tests = summarize(rows, spaces, args.budget)
    print(table)
    ran = f"{len(tasks)} runs in {time.perf_counter() - t0:.0f} s ({os.cpu_count()} cores here, --jobs {args.jobs})"
    if done:
        ran += f", {len(done)} from {args.checkpoint}"
    if args.reuse:
        ran += f", {len(rows) - len(tasks) - len(done)} reused from {args.reuse}"
    print(f"\n{ran}; " + closing_line(failing, compared))
    if replicates := replicate_check(rows, spaces, args.budget):
        print(replicates)
    if significance := significance_line(tests):
        print(significance)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"args": vars(args), "runs": rows}, indent=1))


if __name__ == "__main__":
    main()
