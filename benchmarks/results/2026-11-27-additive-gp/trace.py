"""Where a search looks: for one space and some seeds, each measured config's distance (knobs that differ) from the
space's optimum, batch by batch, and which part of the model strategy proposed it; BO's picks beside them. From the
repository root:

    python3 benchmarks/results/2026-11-27-additive-gp/trace.py synth-basins-9k11-s21 0,1 '{"joint_additive": false}'

(the third argument: the model strategy's options, JSON; none for its defaults).

Sources of the model strategy's configs: s = a one-knob sweep of a basin best, j = the joint expected improvement of
the two GPs (before `joint_until`), g = the fitted GP's share (after it), m = the smooth GP's (BO's kernel) share,
e = the ensemble's acquisition, r = random or space-filling.
"""
import collections
import json
import sys

sys.path[:0] = ["benchmarks", "."]  # run from the repository root
import tuner_server.search.model_guided as model_guided  # noqa: E402
import tuner_server.search.portfolio as portfolio  # noqa: E402
from tuner_server.replay import run_strategy  # noqa: E402
from tuner_server.search.knob_walk import config_id  # noqa: E402
from tuner_server.synthetic_spaces import spec_from_name, synthetic_table  # noqa: E402

SOURCE: dict[tuple, str] = {}  # config id -> the part that proposed it first
ROUNDS = 128  # measurements traced batch by batch


def tagged(method, letter: str):
    def wrapper(*args, **kwargs):
        out = method(*args, **kwargs)
        for config in out:
            SOURCE.setdefault(config_id(config), letter)
        return out
    return wrapper


def tag_sources() -> None:
    ModelGuided, Portfolio = model_guided.ModelGuided, portfolio.Portfolio
    ModelGuided._sweeps = tagged(ModelGuided._sweeps, "s")
    Portfolio._smooth_picks = tagged(Portfolio._smooth_picks, "m")
    picks = Portfolio._picks

    def gp_picks(self, observations, slots, seen, taken, pool):
        out = picks(self, observations, slots, seen, taken, pool)
        for config in out:
            SOURCE.setdefault(config_id(config), "g" if len(observations) >= self.options["joint_until"] else "j")
        return out
    Portfolio._picks = gp_picks
    model_guided.pick_diverse = tagged(model_guided.pick_diverse, "e")


def improvements(observed, optimum, distance, sources: bool = True) -> list[tuple]:
    best, out = None, []
    for i, o in enumerate(observed, 1):
        if o.median_s and (best is None or o.median_s < best):
            best = o.median_s
            step = (i, round(best / optimum, 3), distance(o.config))
            out.append(step + (SOURCE.get(config_id(o.config), "r"),) if sources else step)
    return out


def main(space: str, seeds: list[int], options: dict) -> None:
    tag_sources()
    table = synthetic_table(spec_from_name(space))
    best = min((o for o in table.results.values() if o.median_s), key=lambda o: o.median_s).config

    def distance(config):
        return sum(config[k] != best[k] for k in best)

    for seed in seeds:
        SOURCE.clear()
        observed = run_strategy(table, "model", 400, seed=seed, batch=8, options=options)
        reached = next((i for i, o in enumerate(observed, 1) if o.median_s and o.median_s <= 1.05 * table.optimum),
                       None)
        print(f"\n## {space}, seed {seed}: model strategy {json.dumps(options)}, 5 % reached after {reached} "
              "measurements")
        print("sources before then:", dict(collections.Counter(SOURCE.get(config_id(o.config), "r")
                                                               for o in observed[:reached or 400])))
        print("improvements (measurement, best/optimum, distance, source):", improvements(observed, table.optimum,
                                                                                      distance))
        for b in range(0, min(ROUNDS, len(observed)), 8):
            picks = " ".join(f"{distance(o.config):2d}{SOURCE.get(config_id(o.config), 'r')}"
                             for o in observed[b:b + 8])
            so_far = min(o.median_s for o in observed[:b + 8] if o.median_s) / table.optimum
            print(f"  {b:3d}: {picks}   best {so_far:.3f}")
        observed = run_strategy(table, "bo", 400, seed=seed, batch=8, options={"candidates": len(table)})
        print(f"BO, seed {seed}: improvements (measurement, best/optimum, distance)",
              improvements(observed, table.optimum, distance, sources=False))
        for b in range(0, min(ROUNDS, len(observed)), 8):
            so_far = min(o.median_s for o in observed[:b + 8] if o.median_s) / table.optimum
            print(f"  {b:3d}: " + " ".join(f"{distance(o.config):2d} " for o in observed[b:b + 8])
                  + f"   best {so_far:.3f}")


if __name__ == "__main__":
    main(sys.argv[1], [int(s) for s in sys.argv[2].split(",")], json.loads(sys.argv[3]) if len(sys.argv) > 3 else {})
