"""PyTorch / ours on the Sapphire Rapids Xeon, with AMX's tiles and with the FMA default they replaced, as an SVG (no
plotting library): one row per case, a dot at the median of the interleaved rounds and a bar over their range, on a log
axis with 1 (level with PyTorch) marked. Right of 1, ours is faster.

    python3 benchmarks/results/2026-12-01-cpu-amx/figure.py    # writes amx.svg beside this file
"""
from __future__ import annotations

import json
import math
from html import escape
from pathlib import Path

HERE = Path(__file__).resolve().parent
# (file, key of the tiles' ratio): the GEMMs' tiles are the AMX target's default; conv2d's the padded copy's tiles
SOURCES = [("defaults-2cores.json", "torch/default", "2 cores"), ("defaults-16cores.json", "torch/default", "16 cores"),
           ("conv-padded-2cores.json", "torch/padded_tiles", "2 cores")]
BEFORE = "torch/avx512bf16 default"
SERIES = (("tiles", "#f4511e"), ("FMA default", "#1e88e5"))
ROW, LABEL, PLOT, TOP, BOTTOM = 22, 285, 460, 40, 36
LO, HI = 0.2, 4.0  # the axis: PyTorch 5x faster .. ours 4x faster


def _x(ratio: float) -> float:
    return LABEL + PLOT * (math.log(min(max(ratio, LO), HI)) - math.log(LO)) / (math.log(HI) - math.log(LO))


def label(workload: str) -> str:
    """'matmul(M=16,N=4096,K=4096,dtype=bfloat16)' -> 'matmul 16x4096x4096', conv2d as 'N x C x H x W -> K, R x S'."""
    op, _, params = workload.rstrip(")").partition("(")
    p = dict(kv.split("=") for kv in params.split(","))
    if op == "conv2d":
        stride = f" /{p['stride']}" if p.get("stride", "1") != "1" else ""
        return f"conv2d {p['N']}×{p['C']}×{p['H']}×{p['W']} → {p['K']}, {p['R']}×{p['S']}{stride}"
    batch = f"{p['batch']}×" if "batch" in p else ""
    return f"{op} {batch}{p['M']}×{p['N']}×{p['K']}"


def rows() -> list[tuple[str, list[float], list[float]]]:
    """(label, tiles' [median, min, max], the FMA default's) of every case; conv2d's from the padded copy's tiles (the
    defaults' file has their im2col tiles, the default before)."""
    out = []
    for name, key, cores in SOURCES:
        for row in json.loads((HERE / name).read_text())["rows"]:
            if name.startswith("defaults") and row["workload"].startswith("conv2d"):
                continue
            out.append((f"{label(row['workload'])}, {cores}", row[key], row[BEFORE]))
    return out


def svg(data) -> str:
    height = TOP + ROW * len(data) + BOTTOM
    width = LABEL + PLOT + 20
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
             'font-size="11">',
             f'<text x="{LABEL}" y="14" font-weight="bold">PyTorch time / ours, bfloat16, Sapphire Rapids '
             '(&gt; 1: ours faster)</text>']
    for i, (name, colour) in enumerate(SERIES):
        parts.append(f'<circle cx="{LABEL + 10 + 120 * i}" cy="28" r="4" fill="{colour}"/>'
                     f'<text x="{LABEL + 18 + 120 * i}" y="32">{name}</text>')
    for i, (label, tiles, before) in enumerate(data):
        y = TOP + ROW * i + ROW / 2
        parts.append(f'<text x="{LABEL - 6}" y="{y + 4}" text-anchor="end">{escape(label)}</text>')
        for (_, colour), (median, lo, hi), dy in zip(SERIES, (tiles, before), (-3, 3), strict=True):
            parts.append(f'<line x1="{_x(lo):.1f}" x2="{_x(hi):.1f}" y1="{y + dy}" y2="{y + dy}" stroke="{colour}" '
                         'stroke-width="2" opacity="0.5"/>')
            parts.append(f'<circle cx="{_x(median):.1f}" cy="{y + dy}" r="4" fill="{colour}"/>')
    bottom = TOP + ROW * len(data)
    for tick in (0.25, 0.5, 1, 2, 4):
        x = _x(tick)
        dash = "" if tick == 1 else ' stroke-dasharray="2,3"'
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP - 4}" y2="{bottom}" stroke="#555"{dash}/>')
        parts.append(f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">{tick:g}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    (HERE / "amx.svg").write_text(svg(rows()))
    print(HERE / "amx.svg")
