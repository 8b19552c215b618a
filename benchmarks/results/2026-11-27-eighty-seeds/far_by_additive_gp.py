"""A screened variant, not kept: once stalled (`stall`), the `explore` slots go to unseen configs at least
`basin_distance` knobs from every basin best, picked by the additive GP's expected improvement (fitted on up to 512
observations), not by the ensemble's acquisition on a random draw. From the repository root (lent machine, 16 cores),
with SPACES the five spaces of the README (synth-basins-11k12-s32,synth-needle-14k12-s34,synth-needle-10k11-s3,
synth-noisy-7k11-s16,synth-basins-9k11-s21, as one word):

    python3 benchmarks/results/2026-11-27-eighty-seeds/far_by_additive_gp.py --tables '' --synthetic "$SPACES" \\
        --seeds 40 --jobs 16 --strategies model --options '{"stall": 48}' \\
        --checkpoint far_by_additive_gp-5spaces-40seeds.jsonl
"""
import sys

sys.path[:0] = ["benchmarks", "."]  # run from the repository root
import search_efficiency  # noqa: E402

from tuner_server.search import model_guided  # noqa: E402
from tuner_server.search.additive_gp import AdditiveGP  # noqa: E402
from tuner_server.search.gaussian_process import one_blas_thread  # noqa: E402
from tuner_server.search.knob_walk import hamming  # noqa: E402
from tuner_server.search.portfolio import XI  # noqa: E402


def far(self, model, slots, budget):
    if slots <= 0:
        return []
    bests, portfolio = self._bests(), self._portfolio
    ran, y = portfolio._ran(list(self._own.values()), 512)
    if len(y) < 8:
        return []
    candidates, indices = portfolio._candidates(set(self._seen), self._pool.values(), 8192)
    keep = [i for i, c in enumerate(candidates)
            if all(hamming(c, b) >= self.options["basin_distance"] for b in bests)]
    if len(keep) <= slots:
        return [candidates[i] for i in keep]
    with one_blas_thread():
        gp = AdditiveGP(portfolio.additive.at(ran), y)
        picks = gp.ei_batch(portfolio.additive.at(indices[keep]), slots, XI)
    return [candidates[keep[j]] for j in picks]


if __name__ == "__main__":
    model_guided.ModelGuided._far = far  # before the worker processes fork
    search_efficiency.main(sys.argv[1:])
