"""CPU template for softmax over the last axis: OpenMP over rows, vectorized passes over each row.

Per row: statistics (max m and sum s of exp(x - m)), then Y = exp(x - m) / s.
- stats="two_pass": a max pass, then a sum pass; with store_exp=1 the sum pass also writes exp(x - m)
  to Y and the last pass only rescales Y (no second exp; the row is still in cache). A half-typed Y would round
  exp(x - m) twice, so there the exps go to a float32 row of the task's own (on the stack up to 8192 columns).
- stats="online": one pass keeps (m, s) per lane and rescales s whenever m grows (two exps per element,
  but the row is read once for its statistics).
"""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.schedules.cpu import rowloops as R
from compiler_core.space import Constraint, Knob, Space

SCRATCH_MAX_COLS = 1 << 16  # a half-typed Y's float32 row of exps: 256 KiB per task at most


def space(w, target) -> Space:
    return Space(
        knobs=(
            R.rows_knob(),
            *R.vector_knobs(),
            Knob("stats", ("two_pass", "online"), "max then sum, or one online (max, sum) pass"),
            Knob("store_exp", (0, 1), "two_pass: the sum pass stores exp(x - max), the last pass rescales it"),
        ),
        constraints=(
            Constraint("store_exp needs stats=two_pass", lambda c: c["stats"] == "two_pass" or not c["store_exp"]),
            Constraint(f"store_exp with a {w.dtype} Y keeps a float32 row per task: cols ({w['cols']}) <= "
                       f"{SCRATCH_MAX_COLS}",
                       lambda c: w.dtype == "float32" or not c["store_exp"] or w["cols"] <= SCRATCH_MAX_COLS),
        ),
    )


def default_config(w, target) -> dict:
    return {"rows_per_task": 1, "vector": R.EXPLICIT, "accumulators": 2, "stats": "two_pass",
            "store_exp": int(w.dtype == "float32" or w["cols"] <= SCRATCH_MAX_COLS)}


def _max_reduction(X, i) -> R.Reduction:
    return R.Reduction(
        init=(float("-inf"),),
        update=lambda rl, st, j, lanes: [rl.maximum(st[0], rl.load(X, (i, j), lanes))],
        merge=lambda rl, a, b: [rl.maximum(a[0], b[0])],
    )


def _exp_sum_reduction(X, i, m, store) -> R.Reduction:
    """The sum of exp(x - m); with `store` (buffer, index of column j) each exp is also stored there."""
    def update(rl, st, j, lanes):
        e = rl.exp(rl.load(X, (i, j), lanes) - rl.splat(m, lanes))
        if store:
            e = rl.bind(e)
            rl.b.store(store[0], store[1](j), e, lanes)
        return [st[0] + e]

    return R.Reduction(init=(0.0,), update=update, merge=lambda rl, a, b: [a[0] + b[0]])


def _online_reduction(X, i) -> R.Reduction:
    """State (m, s): s is the sum of exp(x - m). m starts at -FLT_MAX, not -inf, so -inf inputs give
    exp(-inf) = 0 rather than exp(-inf - -inf) = NaN."""
    def merge(rl, a, b):
        m = rl.bind(rl.maximum(a[0], b[0]))
        return [m, a[1] * rl.exp(a[0] - m) + b[1] * rl.exp(b[0] - m)]

    def update(rl, st, j, lanes):
        x = rl.bind(rl.load(X, (i, j), lanes))
        m = rl.bind(rl.maximum(st[0], x))
        return [m, st[1] * rl.exp(st[0] - m) + rl.exp(x - m)]

    return R.Reduction(init=(R.FLOAT_LOWEST, 0.0), update=update, merge=merge)


def schedule(w, config, target) -> S.Module:
    rows, cols = w["rows"], w["cols"]
    X = S.Buffer("in_X", w.dtype, (rows, cols))
    Y = S.Buffer("out_Y", w.dtype, (rows, cols))
    b = IRBuilder()
    rl = R.RowLoops(b, config["vector"], R.lanes_for(target), config["accumulators"])
    with R.parallel_rows(b, rows, config["rows_per_task"]) as i:
        if config["stats"] == "online":
            with rl.reduce(_online_reduction(X, i), cols) as (m, s):
                _normalise(rl, X, Y, i, cols, m, s, None)
        elif not config["store_exp"]:
            _two_pass(rl, X, Y, i, cols, None)
        elif w.dtype == "float32":
            _two_pass(rl, X, Y, i, cols, (Y, lambda j: (i, j)))
        else:
            with b.allocate("exps", "float32", (cols,), S.Scope.LOCAL) as exps:
                _two_pass(rl, X, Y, i, cols, (exps, lambda j: (j,)))
    func = S.PrimFunc("softmax_cpu", (X, Y), b.get())
    return S.Module("softmax", (func,), (X, Y), (), 1)


def _two_pass(rl, X, Y, i, cols, exps) -> None:
    """The max pass, the sum pass (storing each exp where `exps` says: (buffer, index of column j), or nowhere),
    then Y."""
    with rl.reduce(_max_reduction(X, i), cols) as (m,):
        with rl.reduce(_exp_sum_reduction(X, i, m, exps), cols) as (s,):
            _normalise(rl, X, Y, i, cols, m, s, exps)


def _normalise(rl, X, Y, i, cols, m, s, exps) -> None:
    """Y = exp(x - m) / s, the exps read back from `exps` where the sum pass stored them, else computed again."""
    with rl.b.let(rl.name("inv"), E.FloatImm(1.0) / s, "float32") as inv:
        def emit(j, lanes):
            if exps:
                e = rl.load(exps[0], exps[1](j), lanes)
            else:
                e = rl.exp(rl.load(X, (i, j), lanes) - rl.splat(m, lanes))
            rl.b.store(Y, (i, j), e * rl.splat(inv, lanes), lanes)

        rl.map(cols, emit)
