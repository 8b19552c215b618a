"""The search-efficiency report, from per-seed runs (benchmarks/search_efficiency.py makes them): each strategy's
median measurements to 5 % of the optimum, fraction of seeds reaching it and best/optimum at 100 measurements, each with
its spread over seeds; the model strategy's verdict against the best of GA and BO; rank tests with Holm's correction;
and the bar's noise floor (each strategy's seeds against a replicate of the references)."""
from __future__ import annotations

import math
import statistics

import numpy as np
from scipy.stats import mannwhitneyu

from tuner_server.replay import ReplayTable

REFERENCES = ("ga", "bo")
AT = 100  # best/optimum is reported after this many measurements
LEVEL = 0.9  # of the intervals reported beside medians and fractions
RESAMPLES = 2000
WITHIN = " (within spread)"
ALPHA = 0.05  # the significance level of the rank tests against the references
MIN_TESTED = 10  # seeds of each strategy at least before a rank test is reported


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
    that never gets there counts as cap + 1, so reach is in it too); `alternative` "less": that they run smaller,
    "two-sided": that they differ."""
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
