"""CPU template for layernorm over the last axis: OpenMP over rows, vectorized passes over each row.

Per row, with d = x - x[row, 0] (a shift by a row element: exact for values within a factor 2 of it, and
it keeps the statistics on the scale of the spread, not of the row's offset), the mean dmean of d and the
variance, then Y = (d - dmean) * rsqrt(var + eps) * gamma + beta. A constant row has d = 0: exactly beta.
- stats="two_pass": sum of d for dmean, then the sum of (d - dmean)^2 over the row again (in cache).
- stats="shifted": one pass of sums of d and d^2; the shift keeps the cancellation in
  var = E[d^2] - E[d]^2 small (clamped at 0).
"""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.schedules.cpu import rowloops as R
from compiler_core.space import Knob, Space


def space(w, target) -> Space:
    return Space(
        knobs=(
            R.rows_knob(),
            *R.vector_knobs(),
            Knob("stats", ("two_pass", "shifted"), "mean then centred variance, or one pass of shifted sums"),
        ),
    )


def default_config(w, target) -> dict:
    return {"rows_per_task": 1, "vector": R.EXPLICIT, "accumulators": 2, "stats": "two_pass"}


def _sum(term) -> R.Reduction:
    """Sum of term(rl, j, lanes) over the row."""
    return R.Reduction(init=(0.0,), update=lambda rl, st, j, lanes: [st[0] + term(rl, j, lanes)],
                       merge=lambda rl, a, b: [a[0] + b[0]])


def _shifted_sums(X, i, shift) -> R.Reduction:
    def update(rl, st, j, lanes):
        d = rl.bind(rl.load(X, (i, j), lanes) - rl.splat(shift, lanes))
        return [st[0] + d, st[1] + d * d]

    return R.Reduction(init=(0.0, 0.0), update=update, merge=lambda rl, a, b: [a[0] + b[0], a[1] + b[1]])


def schedule(w, config, target) -> S.Module:
    rows, cols, dt = w["rows"], w["cols"], w.dtype
    X = S.Buffer("in_X", dt, (rows, cols))
    G = S.Buffer("in_gamma", dt, (cols,))
    Bt = S.Buffer("in_beta", dt, (cols,))
    Y = S.Buffer("out_Y", dt, (rows, cols))
    b = IRBuilder()
    rl = R.RowLoops(b, config["vector"], R.lanes_for(target), config["accumulators"])
    n, eps = E.FloatImm(float(cols)), E.FloatImm(float(w["eps"]))
    with R.parallel_rows(b, rows, config["rows_per_task"]) as i:
        with b.let("shift", X[i, 0], "float32") as shift:
            if config["stats"] == "two_pass":
                with rl.reduce(_sum(lambda rl, j, lanes: rl.load(X, (i, j), lanes) - rl.splat(shift, lanes)),
                               cols) as (s1,):
                    with b.let("dmean", s1 / n, "float32") as dmean:
                        def centred_square(rl, j, lanes):
                            d = rl.bind(rl.load(X, (i, j), lanes) - rl.splat(shift, lanes) - rl.splat(dmean, lanes))
                            return d * d

                        with rl.reduce(_sum(centred_square), cols) as (q,):
                            with b.let("rstd", E.call("rsqrt", q / n + eps), "float32") as rstd:
                                _normalise(rl, X, G, Bt, Y, i, cols, shift, dmean, rstd)
            else:
                with rl.reduce(_shifted_sums(X, i, shift), cols) as (s1, s2):
                    with b.let("dmean", s1 / n, "float32") as dmean:
                        var = rl.maximum(E.FloatImm(0.0), s2 / n - dmean * dmean)
                        with b.let("rstd", E.call("rsqrt", var + eps), "float32") as rstd:
                            _normalise(rl, X, G, Bt, Y, i, cols, shift, dmean, rstd)
    func = S.PrimFunc("layernorm_cpu", (X, G, Bt, Y), b.get())
    return S.Module("layernorm", (func,), (X, G, Bt, Y), (), 3)


def _normalise(rl, X, G, Bt, Y, i, cols, shift: E.Var, dmean: E.Var, rstd: E.Var) -> None:
    """Centres as (x - shift) - dmean: the mean itself, shift + dmean, would round at the offset's scale."""
    def emit(j, lanes):
        d = rl.load(X, (i, j), lanes) - rl.splat(shift, lanes) - rl.splat(dmean, lanes)
        y = d * rl.splat(rstd, lanes) * rl.load(G, (j,), lanes) + rl.load(Bt, (j,), lanes)
        rl.b.store(Y, (i, j), y, lanes)

    rl.map(cols, emit)
