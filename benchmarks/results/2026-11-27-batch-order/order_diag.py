"""Within-batch order: where the first config within 5 % sits in its batch, as proposed and under other orders
(the trajectory is the proposed one; only the position inside the hit batch changes)."""
import json, sys
sys.path[:0] = ["benchmarks", "."]
import numpy as np
import tuner_server.search.model_guided as mg
from tuner_server.replay import load_table, run_strategy
from tuner_server.search.knob_walk import config_id
from tuner_server.synthetic_spaces import spec_from_name, synthetic_table

SNAP = {}  # config id -> (gp, smooth, ens, trust tuple)
orig = mg.ModelGuided.propose
def propose(self, n):
    batch = orig(self, n)
    P = self._portfolio
    trust = tuple(P.trust[s] for s in ("gp", "smooth", "ensemble")) + (P.updates,)
    for c in batch:
        s = P._predicted.get(config_id(c))
        SNAP[config_id(c)] = (s, trust)
    return batch
mg.ModelGuided.propose = propose

def table_for(name):
    return synthetic_table(spec_from_name(name)) if name.startswith("synth") else load_table(f"benchmarks/data/{name}.json.gz")

ORDERS = ("proposed", "gp", "smooth", "ensemble", "trusted", "trusted_gp_first")
def positions(batch, good):
    snaps = [SNAP.get(config_id(o.config), (None, None)) for o in batch]
    out = {"proposed": good.index(True) + 1}
    scores = np.array([s if s is not None else (np.nan,) * 3 for s, _ in snaps], dtype=float)
    trust = next((t for _, t in snaps if t is not None), None)
    def pos(col):
        v = scores[:, col]
        if np.isnan(v).all():
            return out["proposed"]
        order = np.argsort(-np.nan_to_num(v, nan=-np.inf), kind="stable")
        return next(p for p, i in enumerate(order) if good[i]) + 1
    out["gp"], out["smooth"], out["ensemble"] = pos(0), pos(1), pos(2)
    if trust is None:
        out["trusted"] = out["trusted_gp_first"] = out["proposed"]
    else:
        usable = [i for i in range(3) if not np.isnan(scores[:, i]).all()]
        best = max(usable, key=lambda i: (trust[i], -i)) if usable else None
        out["trusted"] = pos(best) if best is not None else out["proposed"]
        first = best if trust[3] > 0 else (0 if 0 in usable else best)
        out["trusted_gp_first"] = pos(first) if first is not None else out["proposed"]
    return out

def main(space, seeds):
    table = table_for(space)
    runs = []
    for seed in seeds:
        SNAP.clear()
        obs = run_strategy(table, "model", 400, seed=seed, batch=8, options={})
        hit = next((i for i, o in enumerate(obs) if o.median_s and o.median_s <= 1.05 * table.optimum), None)
        if hit is None:
            runs.append({"seed": seed}); continue
        b0 = hit - hit % 8
        batch = obs[b0:b0 + 8]
        good = [o.median_s is not None and o.median_s <= 1.05 * table.optimum for o in batch]
        runs.append({"seed": seed, **{k: b0 + v for k, v in positions(batch, good).items()}})
    print(json.dumps({"space": space, "runs": runs}), flush=True)

main(sys.argv[1], range(int(sys.argv[2]), int(sys.argv[3])))
