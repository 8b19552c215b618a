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
The report itself (figures, verdict, tests) is benchmarks/efficiency_report.py. `--strategies '' --reuse
FILE` prints the table of an earlier --json file again. With `--checkpoint FILE` every finished run is appended to
FILE (JSON lines) as it ends, and runs already there are not run again: a run cut short (a time limit, Ctrl-C) goes
on where it stopped when the same command is given again; a run is one seed's, so a checkpoint of 40 seeds gives the
first 40 of a command with more. `--decided` stops each run once it has reached 5 % and made 100 measurements:
its figures are the full run's, at a fraction of the cost (160 seeds of 72 spaces: 13 minutes on 64 cores).

    nice -n 10 python benchmarks/search_efficiency.py --seeds 20 --jobs 2
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # one core per run: parallel BLAS
    os.environ.setdefault(_var, "1")  # threads only fight each other (and --jobs) on a shared host

from benchmarks.efficiency_figure import efficiency_svg  # noqa: E402
from benchmarks.efficiency_report import (  # noqa: E402
    AT,
    closing_line,
    replicate_check,
    significance_line,
    summarize,
)
from tuner_server.cost_model import lowered_featurizers, shared_cache, train_on_trials  # noqa: E402
from tuner_server.cost_model.featurize import FEATURE_NAMES  # noqa: E402
from tuner_server.replay import ReplayError, ReplayTable, load_tables, run_strategy  # noqa: E402
from tuner_server.search import STRATEGIES as REGISTRY  # noqa: E402
from tuner_server.search import Option, check_options  # noqa: E402
from tuner_server.synthetic_spaces import (  # noqa: E402
    GROUPS,
    PRESETS,
    SyntheticSpec,
    spec_from_name,
    synthetic_table,
)

STRATEGIES = ("random", "grid", "ga", "bo", "model", "model+transfer")  # the default, in the report's order
TRANSFER = "model+transfer"  # the model strategy started from a model of the other tables (not a registry name)
KNOWN = (*REGISTRY, TRANSFER)  # what --strategies takes: the search strategies, and the model's transfer variant
BO_MOST = Option(*REGISTRY["bo"].OPTIONS["candidates"]).maximum  # configs the BO reference scores per round at most
TOLERANCE = 0.05


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tables", default=str(REPO / "benchmarks" / "data" / "*.json.gz"),
                   help="glob of recorded tables ('' for none)")
    p.add_argument("--synthetic", default="all",
                   help="comma-separated synthetic spaces by name (a preset's, or any synth-KIND-<N>k<knobs>-s<seed>: "
                        "N thousand configs, or synth-KIND-<N>x<knobs>-s<seed>: N configs) or group: 'all' (the "
                        "presets), 'held-out', 'fresh', 'later' or 'newest' (spaces kept apart from tuning the "
                        "defaults), 'every' (presets, held-out and fresh), 'report' (those and later: the synthetic "
                        "spaces of the 48-space report) or 'none'")
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--batch", type=int, default=8, help="configs proposed per round (the farm's queue refill)")
    p.add_argument("--budget", type=int, default=400, help="measurements per run, at most the space's size")
    p.add_argument("--strategies", default=",".join(STRATEGIES),
                   help=f"comma-separated, of: {', '.join(KNOWN)} ('' for none, with --reuse)")
    p.add_argument("--options", default="{}", help="JSON object of options for the model strategy (model and "
                                                   "model+transfer; its OPTIONS table, GET /v1/ops, lists them)")
    p.add_argument("--bo-sample", type=int, default=0,
                   help="configs the BO reference scores per round: 0 (default) every unmeasured config, as Kernel "
                        "Tuner's BO does; N a uniform sample of N (the farm's bounded-cost default is 2048; the "
                        "results files before 2026-11-27's faithful BO ran with 2048)")
    p.add_argument("--decided", action="store_true",
                   help="stop each run once what the report reads of it is known: it reached 5 %% of the optimum and "
                        f"made {AT} measurements (best@{AT}). Its figures are the full run's; only `measured` and "
                        "`wall_s` are its own. Many seeds then cost a fraction of full runs")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (runs are independent)")
    p.add_argument("--json", dest="json_out", default=None, help="write every run's figures here")
    p.add_argument("--reuse", default=None,
                   help="a --json file of an earlier run (same seeds, budget and batch): its runs of strategies not "
                        "in --strategies are reported beside the new ones (e.g. the reference strategies, unchanged)")
    p.add_argument("--svg", default=None, help="also draw the report as a figure here (SVG: per space, each "
                                                "strategy's median measurements to 5 %% with its 90 %% interval)")
    p.add_argument("--checkpoint", default=None,
                   help="JSON-lines file: each finished run is appended as it ends, and runs already in it (of the "
                        "same seeds, budget, batch and options) are reported without running them again")
    args = p.parse_args(argv)
    _check_counts(p, args)
    _check_strategies(p, args)
    for flag, path in (("--json", args.json_out), ("--svg", args.svg), ("--checkpoint", args.checkpoint)):
        folder = Path(path).resolve().parent if path else None
        if folder is not None and not (folder.is_dir() and os.access(folder, os.W_OK)):
            p.error(f"{flag} {path}: {folder} is not a folder this process can write to (checked before any run, "
                    "so a long run is not lost at its end)")
    return args


COUNTS = (  # flag, least, most (None: no bound), what it counts
    ("--seeds", 1, None, "runs per space and strategy"),
    ("--batch", 1, None, "configs proposed per round"),
    ("--budget", 1, None, "measurements per run"),
    ("--jobs", 1, None, "worker processes"),
    ("--bo-sample", 0, BO_MOST, "configs the BO reference scores per round; 0: every unmeasured config"),
)


def _check_counts(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Exit naming the first count outside its range (before any run)."""
    for flag, least, most, what in COUNTS:
        value = getattr(args, flag.removeprefix("--").replace("-", "_"))
        if value < least or (most is not None and value > most):
            allowed = f"{least}-{most}" if most is not None else f"{least} or more"
            p.error(f"{flag} {value}: allowed {allowed} ({what})")


def strategy_names(text: str) -> list[str]:
    """The strategies `--strategies` names, each once, in its order."""
    return list(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))


def _check_strategies(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Exit naming unknown strategies and malformed or unknown --options (checked against the model strategy's
    OPTIONS table, as job submission checks them); warn when --options are given and no model strategy runs."""
    names = strategy_names(args.strategies)
    unknown = [name for name in names if name not in KNOWN]
    if unknown:
        p.error(f"--strategies: unknown {', '.join(map(repr, unknown))}; known: {', '.join(KNOWN)}")
    try:
        options = json.loads(args.options)
    except json.JSONDecodeError as exc:
        p.error(f"--options {args.options!r}: not JSON ({exc})")
    if not isinstance(options, dict):
        p.error(f"--options {args.options!r}: give a JSON object of the model strategy's options")
    try:
        check_options("model", options)
    except ValueError as exc:
        p.error(f"--options: {exc}")
    if options and not {"model", TRANSFER} & set(names):
        print(f"warning: --options are the model strategy's, and --strategies {args.strategies!r} runs no model "
              "strategy: they are not used", file=sys.stderr)


def reach(observed, optimum: float, tolerance: float = TOLERANCE) -> int | None:
    """Measurements until the best OK runtime is within `tolerance` of the optimum (None: never, in the run)."""
    best = math.inf
    for i, o in enumerate(observed, 1):
        if o.status == "OK" and o.median_s is not None:
            best = min(best, o.median_s)
        if best <= optimum * (1 + tolerance):
            return i
    return None


def decided(observed, optimum: float) -> bool:
    """Whether a run's report figures (`reach`, `best_after` AT) are what its full run's would be."""
    return len(observed) >= AT and reach(observed, optimum) is not None


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


def synthetic_specs(text: str) -> list[SyntheticSpec]:
    """The synthetic spaces `--synthetic` names (comma-separated names and groups, each space once, in order); exits
    naming the wrong ones, the presets and the groups."""
    known = {name: spec for group in GROUPS.values() for name, spec in group.items()}
    items = [n.strip() for n in text.split(",") if n.strip()]
    names = list(dict.fromkeys(name for item in items for name in GROUPS.get(item, [item])))  # groups expanded
    specs, wrong = [], []
    for name in names:
        try:
            specs.append(known[name] if name in known else spec_from_name(name))
        except ValueError as e:
            wrong.append(str(e))
    if wrong:
        raise SystemExit(f"--synthetic: {'; '.join(wrong)}. Presets: {', '.join(PRESETS)}; groups: {', '.join(GROUPS)}")
    return specs


def load_spaces(args) -> dict[str, ReplayTable]:
    try:
        loaded = load_tables(args.tables)
    except ReplayError as exc:
        raise SystemExit(f"--tables: {exc}") from None
    tables = [t for t in loaded if t.optimum is not None]
    for table in loaded:
        if table.optimum is None:  # no config ran: nothing to measure a search against
            print(f"skipped {table.meta['name']}: none of its {len(table)} recorded configs ran (no optimum)",
                  file=sys.stderr)
    tables += [synthetic_table(spec) for spec in synthetic_specs(args.synthetic)]
    return {t.meta["name"]: t for t in tables}


def _init(args) -> None:
    _SPACES.update(load_spaces(args))
    if TRANSFER in strategy_names(args.strategies):
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
    optimum = table.optimum
    until = functools.partial(decided, optimum=optimum) if args.decided else None
    observed = run_strategy(table, base, budget, seed=seed, batch=args.batch, options=options, until=until,
                            cost_model=_TRANSFER.get(name) if strategy == TRANSFER else None)
    return {"space": name, "strategy": strategy, "seed": seed, "measured": len(observed),
            "to_5pct": reach(observed, optimum), f"best_at_{AT}": best_after(observed, optimum, AT),
            "wall_s": time.perf_counter() - t0}


def _run_in_worker(task, args) -> dict:
    if not _SPACES:
        _init(args)
    return run_one(task, args)


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
CHECKPOINTED = ("budget", "batch", "options", "bo_sample")  # what runs of a checkpoint share with this command (a
# run does not depend on --seeds, so a checkpoint of 40 seeds is the first 40 of one of 200; --decided leaves the
# runs' figures as they are)


def checkpointed_runs(args) -> list[dict]:
    """The runs of --checkpoint (none when it does not exist yet); it must have been written with the same budget,
    batch, options and BO sample (its seeds may be fewer or more: each run is one seed's). A new file starts with a
    line of those settings."""
    path = Path(args.checkpoint)
    settings = {name: getattr(args, name) for name in CHECKPOINTED}
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    if not lines:
        path.write_text(json.dumps({"settings": settings}) + "\n")
        return []
    written = {name: value for name, value in (lines[0].get("settings") or {}).items() if name in CHECKPOINTED}
    if lines[0].get("settings") is None or written != settings:
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
        raise SystemExit("no spaces: --tables gave no table with a config that ran, and --synthetic is none")
    strategies = strategy_names(args.strategies)
    larger = [f"{name} ({len(table)})" for name, table in spaces.items() if len(table) > BO_MOST]
    if "bo" in strategies and not args.bo_sample and larger:
        raise SystemExit(f"--bo-sample 0 scores every config, and the BO reference scores at most {BO_MOST} a round: "
                         f"{', '.join(larger)} hold more; give --bo-sample 1-{BO_MOST}")
    tasks = []
    for name, table in spaces.items():
        print(f"{name}: {len(table)} configs, {len(table.space.knobs)} knobs, optimum "
              f"{table.optimum * 1e3:.4f} ms", file=sys.stderr, flush=True)
        for strategy in strategies:
            if strategy == TRANSFER and table.workload_key is None:
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
        if TRANSFER in strategies and tasks:
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
    if args.svg:
        sizes = {name: len(table) for name, table in spaces.items()}
        Path(args.svg).write_text(efficiency_svg(rows, sizes, args.budget, f"Search efficiency: {args.seeds} seeds, "
                                                 f"budget {args.budget}, batch {args.batch}"))


if __name__ == "__main__":
    main()
