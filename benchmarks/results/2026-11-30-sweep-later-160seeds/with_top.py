"""benchmarks/search_efficiency.py with the swept basins' bests drawn from the TOP fastest measured configs (the TOP
environment variable; `tuner_server.search.basins.TOP` is 64), a screen and not a feature:

    TOP=256 python3 benchmarks/results/2026-11-30-sweep-later-160seeds/with_top.py --options '{"basins": 8}' ...
"""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from tuner_server.search import model_guided as mg  # noqa: E402

TOP = int(os.environ["TOP"])
mg.ModelGuided._bests = lambda self: mg.basin_bests(self._own.values(), self.options["basins"],
                                                    self.options["basin_distance"], TOP)
sys.argv[0] = str(ROOT / "benchmarks" / "search_efficiency.py")
from benchmarks import search_efficiency  # noqa: E402

search_efficiency.main(sys.argv[1:])
