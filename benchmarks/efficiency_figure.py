"""The search-efficiency report as a picture (SVG, no plotting library): one row per space, each strategy's median
measurements to 5 % of the optimum as a dot with its 90 % interval over seeds as a bar, on a log axis; where a strategy
missed 5 % on some seeds, each one's fraction of seeds reaching it; and whether the model strategy met the bar there
(`efficiency_report.verdict`: median, reach and best at 100 measurements against the best of GA and BO). Where 48 rows
of a table ask the reader to compare numbers, the figure shows at a glance where the model strategy is ahead, level or
behind, and by how much against the spread."""
from __future__ import annotations

import math
from collections import defaultdict
from html import escape

from benchmarks.efficiency_report import REFERENCES, summary_row, verdict

COLOURS = {"random": "#9e9e9e", "grid": "#bcaaa4", "ga": "#7cb342", "bo": "#1e88e5", "model": "#f4511e",
           "model+transfer": "#8e24aa"}
ROW, LABEL, PLOT, REACH, MARK = 18, 300, 520, 120, 60  # px: a row's height; the label, axis, reach and verdict columns
TOP, BOTTOM = 46, 40  # px above the first row (legend) and below the last (axis)


def _x(value: float, cap: int) -> float:
    """The horizontal position of `value` measurements on a log axis from 1 to cap + 1 (a miss: cap + 1)."""
    return LABEL + PLOT * math.log(max(min(value, cap + 1), 1)) / math.log(cap + 1)


def _ticks(cap: int) -> list[int]:
    return [t for t in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000) if t <= cap]


def efficiency_svg(rows: list[dict], spaces: dict[str, int], budget: int, title: str = "") -> str:
    """The figure of per-seed `rows` (search_efficiency.py's runs: space, strategy, to_5pct, best_at_100, wall_s) over
    `spaces` (name -> configs, in the order drawn). The axis runs from 1 to `budget` + 1; a run that never reached 5 %
    counts as min(budget, the space's configs) + 1, as in the report's medians."""
    strategies = list(dict.fromkeys(r["strategy"] for r in rows))
    runs_of = defaultdict(list)  # (space, strategy) -> its runs, grouped once for every row of the figure
    for r in rows:
        runs_of[r["space"], r["strategy"]].append(r)
    height = TOP + ROW * len(spaces) + BOTTOM
    width = LABEL + PLOT + REACH + MARK
    colour = {s: COLOURS.get(s, "#000") for s in strategies}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    if title:
        out.append(f'<text x="8" y="16" font-size="13" font-weight="bold">{escape(title)}</text>')
    for i, strategy in enumerate(strategies):  # legend
        x = LABEL + 110 * i
        out.append(f'<circle cx="{x + 5}" cy="33" r="4" fill="{colour[strategy]}"/>'
                   f'<text x="{x + 13}" y="37">{escape(strategy)}</text>')
    bottom = TOP + ROW * len(spaces)
    for t in _ticks(budget) + [budget + 1]:
        x = _x(t, budget)
        label = f"&gt;{budget}" if t == budget + 1 else str(t)
        out.append(f'<line x1="{x:.1f}" y1="{TOP - 4}" x2="{x:.1f}" y2="{bottom}" stroke="#e0e0e0"/>'
                   f'<text x="{x:.1f}" y="{bottom + 14}" text-anchor="middle">{label}</text>')
    out.append(f'<text x="{LABEL + PLOT / 2}" y="{bottom + 32}" text-anchor="middle">measurements to 5 % of the '
               f'optimum (median and 90 % interval over seeds; log axis)</text>')
    out.append(f'<text x="{LABEL + PLOT + REACH / 2}" y="37" text-anchor="middle">seeds reaching 5 %</text>'
               f'<text x="{LABEL + PLOT + REACH + MARK / 2}" y="37" text-anchor="middle">bar</text>')
    for row, (name, configs) in enumerate(spaces.items()):
        y = TOP + ROW * row + ROW / 2
        if row % 2:
            out.append(f'<rect x="0" y="{y - ROW / 2:.1f}" width="{width}" height="{ROW}" fill="#f7f7f7"/>')
        out.append(f'<text class="space" x="{LABEL - 8}" y="{y + 4:.1f}" text-anchor="end">'
                   f'{escape(name)} ({configs})</text>')
        space_cap = min(budget, configs)
        figures = {s: summary_row(runs_of[name, s], space_cap) for s in strategies if runs_of[name, s]}
        for i, (strategy, f) in enumerate(figures.items()):
            dy = (i - (len(figures) - 1) / 2) * 4  # strategies side by side within the row
            low, high = (_x(v, budget) for v in f["median_ci"])
            out.append(f'<line x1="{low:.1f}" y1="{y + dy:.1f}" x2="{high:.1f}" y2="{y + dy:.1f}" '
                       f'stroke="{colour[strategy]}" stroke-width="2" opacity="0.6"/>')
            out.append(f'<circle class="median" data-strategy="{escape(strategy)}" data-median="{f["median"]:g}" '
                       f'cx="{_x(f["median"], budget):.1f}" cy="{y + dy:.1f}" r="3.5" fill="{colour[strategy]}"/>')
        if any(f["reached"] < 1 for f in figures.values()):  # where reach decides; all 1: left blank
            step = REACH / max(len(figures), 1)
            for i, (strategy, f) in enumerate(figures.items()):
                x = LABEL + PLOT + step * (i + 0.5)
                out.append(f'<text class="reach" data-strategy="{escape(strategy)}" x="{x:.1f}" y="{y + 4:.1f}" '
                           f'text-anchor="middle" fill="{colour[strategy]}">{f["reached"]:.2f}</text>')
        refs = [figures[s] for s in REFERENCES if s in figures]
        if "model" in figures and refs:
            good, check = verdict(figures["model"], refs)
            mark = "met" if good else "short"
            out.append(f'<text class="verdict" x="{LABEL + PLOT + REACH + MARK / 2}" y="{y + 4:.1f}" '
                       f'text-anchor="middle" fill="{"#2e7d32" if good else "#c62828"}"><title>{escape(check)}</title>'
                       f'{mark}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
