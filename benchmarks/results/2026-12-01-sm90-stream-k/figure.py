"""The stream-K study as a picture (SVG, no plotting library): one row per shape, each stream-K form's time against
the round-cost default's (median over the rounds; right of the line: stream-K is faster), from split-h200.json.

    python3 benchmarks/results/2026-12-01-sm90-stream-k/figure.py   # writes stream-k.svg beside this file
"""
from __future__ import annotations

import json
import statistics
from html import escape
from pathlib import Path

HERE = Path(__file__).parent
SERIES = {"default_k/default": ("ranges over K blocks", "#1e88e5"), "default_s2/default": ("K-major, 2", "#f4511e"),
          "default_s3/default": ("K-major, 3", "#7cb342"), "default_s8/default": ("K-major, 8", "#9e9e9e")}
ROW, LABEL, PLOT, TOP, BOTTOM = 20, 230, 560, 50, 40
LO, HI = 0.1, 1.2  # the axis: default time / stream-K time


def x(value: float) -> float:
    return LABEL + PLOT * (min(max(value, LO), HI) - LO) / (HI - LO)


def svg(rows: list[dict]) -> str:
    height = TOP + ROW * len(rows) + BOTTOM
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{LABEL + PLOT + 20}" height="{height}" '
           'font-family="sans-serif" font-size="11">',
           '<text x="10" y="16" font-size="13">Stream-K on an H200: default time / stream-K time '
           '(right of 1: stream-K faster)</text>']
    for i, (name, colour) in enumerate(SERIES.values()):
        out.append(f'<circle cx="{LABEL + 10 + 150 * i}" cy="32" r="4" fill="{colour}"/>'
                   f'<text x="{LABEL + 18 + 150 * i}" y="36">{escape(name)}</text>')
    for t in (0.25, 0.5, 0.75, 1.0):
        out.append(f'<line x1="{x(t):.1f}" y1="{TOP - 6}" x2="{x(t):.1f}" y2="{height - BOTTOM + 4}" '
                   f'stroke="{"#000" if t == 1.0 else "#ddd"}"/>'
                   f'<text x="{x(t):.1f}" y="{height - BOTTOM + 18}" text-anchor="middle">{t:g}</text>')
    for r, row in enumerate(rows):
        y = TOP + ROW * r + ROW / 2
        label = (row["workload"].replace("matmul(", "").replace(",dtype=float16)", "")
                 .replace(",dtype=bfloat16)", " bf16"))
        out.append(f'<text x="{LABEL - 8}" y="{y + 4:.1f}" text-anchor="end">{escape(label)}</text>')
        for key, (_name, colour) in SERIES.items():
            if key in row["ratios"]:
                v = statistics.median(row["ratios"][key])
                out.append(f'<circle cx="{x(v):.1f}" cy="{y:.1f}" r="4" fill="{colour}" fill-opacity="0.85"/>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    rows = json.loads((HERE / "split-h200.json").read_text())
    (HERE / "stream-k.svg").write_text(svg(rows))
    print(HERE / "stream-k.svg")
