"""A screened variant: the basins whose best configs are swept are the best ones that still have an unmeasured
one-knob neighbour. A basin whose best is fully swept (a local optimum under one-knob moves) keeps its region (later
basins still differ from it in `basin_distance` knobs) but gives its place in the sweeps to the next distinct basin,
so the sweeps go on down the list of basins instead of stopping once the first `basins` are deepened. LIVE_TOP: the
fastest configs looked at. From the repository root:

    python3 benchmarks/results/2026-11-27-basins11k-variants/live_basins.py --tables '' \\
        --synthetic synth-basins-11k12-s32 --seeds 40 --jobs 2 --strategies model --checkpoint live.jsonl
"""
import os
import sys

sys.path[:0] = ["benchmarks", "."]  # run from the repository root
import search_efficiency  # noqa: E402

from tuner_server.search import model_guided  # noqa: E402
from tuner_server.search.base import OK  # noqa: E402
from tuner_server.search.knob_walk import hamming  # noqa: E402

TOP = int(os.environ.get("LIVE_TOP", "256"))


def live_bests(self):
    k, distance = self.options["basins"], self.options["basin_distance"]
    measured = sorted((o for o in self._own.values() if o.status == OK and o.median_s is not None),
                      key=lambda o: o.median_s)[:TOP]
    regions, live = [], []
    for o in measured:
        if len(live) == k:
            break
        if all(hamming(o.config, b) >= distance for b in regions):
            regions.append(o.config)
            if self._near.unseen(o.config, self._seen):
                live.append(o.config)
    return live


if __name__ == "__main__":
    model_guided.ModelGuided._bests = live_bests  # before the worker processes fork
    search_efficiency.main(sys.argv[1:])
