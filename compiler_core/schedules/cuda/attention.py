"""CUDA template for attention: FlashAttention's online softmax over tiles of keys, on SIMT lanes in float32, or for
the half types with head_dim a multiple of 16 on tensor cores: WMMA (`attention_wmma`, sm_70+, the scores through
shared memory), mma.sync (`attention_mma`, sm_80+, FlashAttention-2: the softmax on the accumulators in registers,
and a split of the keys over blocks for decode steps) or wgmma (`attention_wgmma`, sm_90a, head_dim 64-256: TMA
loads and warpgroup tensor cores, 64 query rows a warpgroup), or, in any dtype, SIMT lanes with register tiles
(`attention_tiled`: each thread a tile of scores and outputs, as a SIMT GEMM's; the float32 engine). Where several
apply the knob `engine` picks one (a tensor-core block holds 16 or 64 query rows per warp or warpgroup: a decode step
of one query row wastes the rest, and the search should see every engine); each engine's own knobs are pinned to one
value under the others. The loop-IR SIMT kernel:

A block holds `rows_per_block` query rows of one head (threadIdx.y), each shared by `threads_per_row` lanes
(threadIdx.x, an aligned group of a warp). A lane keeps the query elements and output accumulators of head_dim
columns tx, tx + threads_per_row, ... in registers. For each tile of `kv_tile` keys the block stages the keys and
values in shared memory (float32, each element loaded once by one thread: coalesced), one barrier, then every row
group:
1. scores the tile: per key, the lanes' partial dot products, a shfl_xor butterfly inside the group, into a small
   register array (every lane of the group holds every score);
2. takes the tile's max, rescales its running sum and accumulators by exp(old max - new max) once per tile;
3. adds exp(score - max) times the value rows to its accumulators.
A second barrier before the next tile overwrites shared memory. Query rows past the end of the head load its last row
and store nothing; keys past the end, and under `causal` keys after the query, score -inf; under `causal` a block
walks only the tiles that hold a key one of its rows sees. Nothing of seq_q x seq_kv is stored.
"""
from __future__ import annotations

from compiler_core.errors import WorkloadError
from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.ops.attention import scale
from compiler_core.schedules.cuda import attention_mma, attention_tiled, attention_wgmma, attention_wmma
from compiler_core.schedules.cuda.attention_tensors import attention_tensors
from compiler_core.schedules.cuda.attention_wmma import FLOAT_LOWEST
from compiler_core.schedules.cuda.block_reduce import NEG_INF, WARP, pow2_ceil
from compiler_core.space import Constraint, Knob, Space

REGISTER_FLOATS = 160  # query part, accumulators and tile scores a lane may hold
REGISTER_OVERHEAD = 40  # registers a lane needs beside them (addresses, statistics, temporaries)


def _lane_columns(w, c: dict) -> int:
    return -(-w["head_dim"] // c["threads_per_row"])


def _lane_floats(w, c: dict) -> int:
    return 2 * _lane_columns(w, c) + c["kv_tile"]


ENGINES = ("simt", "wmma", "mma", "wgmma", "tiled")
SIMT_TILES = (8, 16, 32, 64)
# Each engine's value for the knobs of the others (a config is one engine's: the rest stay at these).
_NO_WGMMA = {"consumers": 1, "overlap": 0, "pingpong": 0, "fold": 0}
_NO_TILES = {"thread_rows": 1}
PINNED = {"simt": {"warps": 1, "pad": 0, "max_first": 0, "row_frags": 1, "stages": 1, "kv_splits": 1, **_NO_WGMMA,
                   **_NO_TILES},
          "wmma": {"threads_per_row": WARP, "rows_per_block": 1, "row_frags": 1, "stages": 1, "kv_splits": 1,
                   **_NO_WGMMA, **_NO_TILES},
          "mma": {"threads_per_row": WARP, "rows_per_block": 1, "pad": 0, "max_first": 0, **_NO_WGMMA, **_NO_TILES},
          "wgmma": {"threads_per_row": WARP, "rows_per_block": 1, "warps": 1, "pad": 0, "max_first": 0,
                    "row_frags": 1, "kv_splits": 1, **_NO_TILES},
          "tiled": {"warps": 1, "pad": 0, "max_first": 0, "row_frags": 1, **_NO_WGMMA}}
# the templates of the engines beside the loop-IR SIMT one
TEMPLATE_ENGINES = {"wmma": attention_wmma, "mma": attention_mma, "wgmma": attention_wgmma, "tiled": attention_tiled}
# what each engine is, for the `engine` knob's doc: only the engines among its choices are described
ENGINE_DOCS = {"simt": "SIMT lanes", "wmma": "WMMA tensor cores through shared memory",
               "mma": "mma.sync tensor cores, softmax in registers", "wgmma": "wgmma (Hopper) tensor cores fed by TMA",
               "tiled": "SIMT lanes with register tiles"}
# The engines a stored config can name, by the knob each engine's arrival added: a config without it was chosen in
# the space before that engine (config_space), and lowers there.
ARRIVALS = (("kv_splits", "mma"), ("consumers", "wgmma"), ("thread_rows", "tiled"))


def _engines(w, target, engines: tuple = ENGINES) -> dict:
    """The spaces of `engines` that apply to `w` on `target` and hold a valid config, by engine name in ENGINES'
    order (WMMA at head_dim 256 holds none: its registers); the tiled SIMT engine only where no tensor-core engine
    does (float32 always)."""
    spaces = {"simt": simt_space(w, target)}
    for engine, template in TEMPLATE_ENGINES.items():
        if engine == "tiled" and len(spaces) > 1:  # the half types' tensor cores are faster: offered where none apply
            continue
        if engine in engines and template.applies(w, target):
            engine_space = template.space(w, target)
            if next(iter(engine_space), None) is not None:
                spaces[engine] = engine_space
    return spaces


def space(w, target, engines: tuple = ENGINES) -> Space:
    """Where several engines apply, the union of their spaces with the knob `engine`; `engines`: those offered (fewer
    for the space a config was stored in, config_space)."""
    spaces = _engines(w, target, engines)
    if len(spaces) == 1:
        return spaces["simt"]
    choices: dict = {}
    docs: dict = {}
    for sp in spaces.values():
        for k in sp.knobs:
            choices.setdefault(k.name, set()).update(k.choices)
            docs.setdefault(k.name, k.doc)
    own = {e: {k.name: k.choices for k in sp.knobs} for e, sp in spaces.items()}
    engine_doc = "the kernel's engine: " + "; ".join(f"{e}: {ENGINE_DOCS[e]}" for e in spaces)
    knobs = (Knob("engine", tuple(spaces), engine_doc),
             *(Knob(name, tuple(sorted(values)), docs[name]) for name, values in choices.items()))
    constraints, parts = [], []
    for engine, sp in spaces.items():
        pins = {k: v for k, v in PINNED[engine].items() if k in choices}
        parts.append((sp, {"engine": engine, **pins}))
        pinned = ", ".join(f"{k}={v}" for k, v in pins.items()) or "no knob of another engine pinned"
        constraints.append(Constraint(f"engine {engine} leaves {pinned}",
                                      lambda c, e=engine, v=pins: c["engine"] != e or all(c[k] == x for k, x in
                                                                                         v.items())))
        for name, allowed in own[engine].items():
            if set(allowed) != choices[name]:
                constraints.append(Constraint(f"engine {engine} takes {name} in {allowed}",
                                              lambda c, e=engine, n=name, a=allowed: c["engine"] != e or c[n] in a))
        constraints += [Constraint(f"engine {engine}: {k.why}", lambda c, e=engine, k=k: c["engine"] != e or k.check(c))
                        for k in sp.constraints]
    return Space(knobs, tuple(constraints), tuple(parts))


def config_space(w, target, config: dict) -> Space:
    """The space `config` belongs to: one stored before an engine arrived (without the knob it added: ARRIVALS,
    where the workload's space has that knob now) lowers in the space it was chosen from, so heads stored then keep
    building."""
    if not isinstance(config, dict):
        return space(w, target)
    if "engine" not in config:  # chosen where SIMT was the only engine (float32 before the tiled one)
        return space(w, target, ("simt",))
    engines, now = list(ENGINES), space(w, target)
    for knob, engine in ARRIVALS:
        if knob in now.names and knob not in config:  # stored before `engine` and every engine after it
            engines = engines[:engines.index(engine)]
            break
    return space(w, target, tuple(engines)) if len(engines) < len(ENGINES) else now


def _engine_of(w, target, config: dict | None) -> str:
    if config is not None:
        return config.get("engine", "simt")
    engines = _engines(w, target)
    if "wgmma" in engines and w["seq_q"] >= attention_wgmma.WG_ROWS:  # a warpgroup's 64 rows, no split of the keys
        return "wgmma"
    if "mma" in engines:
        return "mma"
    if "wmma" in engines and w["seq_q"] >= 64:
        return "wmma"
    # the tiled engine beat the loop-IR one on every float32 shape measured, a decode step of one query row too
    # (benchmarks/results/2026-11-30-attention-tiled/)
    return "tiled" if "tiled" in engines else "simt"


def simt_space(w, target) -> Space:
    if target.warp_size != WARP:
        raise WorkloadError(f"the CUDA attention template shuffles over {WARP}-lane warps; {target.arch} has "
                            f"{target.warp_size}-lane warps")
    D = w["head_dim"]

    def threads(c):
        return c["threads_per_row"] * c["rows_per_block"]

    return Space(
        knobs=(
            Knob("threads_per_row", (1, 2, 4, 8, 16, 32), "lanes sharing one query row (its head_dim columns)"),
            Knob("rows_per_block", (1, 2, 4, 8, 16, 32, 64, 128), "query rows of one block (threadIdx.y)"),
            Knob("kv_tile", (8, 16, 32, 64), "keys staged in shared memory per step (one rescale per tile)"),
        ),
        constraints=(
            Constraint(f"threads_per_row * rows_per_block must be whole warps, {WARP}..{target.max_threads_per_block}",
                       lambda c: WARP <= threads(c) <= target.max_threads_per_block and threads(c) % WARP == 0),
            Constraint("threads_per_row must not exceed head_dim rounded up to a power of two",
                       lambda c: c["threads_per_row"] <= pow2_ceil(D)),
            Constraint("rows_per_block must not exceed max(seq_q rounded up to a power of two, 32 // threads_per_row)",
                       lambda c: c["rows_per_block"] <= max(pow2_ceil(w["seq_q"]), WARP // c["threads_per_row"])),
            Constraint("kv_tile must not exceed seq_kv rounded up to a power of two (at least 8)",
                       lambda c: c["kv_tile"] <= max(8, pow2_ceil(w["seq_kv"]))),
            Constraint(f"2 * kv_tile * head_dim floats of keys and values must fit {target.max_shared_bytes} bytes of "
                       f"shared memory", lambda c: 2 * c["kv_tile"] * D * 4 <= target.max_shared_bytes),
            Constraint(f"2 * ceil(head_dim / threads_per_row) + kv_tile <= {REGISTER_FLOATS} floats per lane, and "
                       f"{REGISTER_OVERHEAD} more registers within {target.register_file} / block threads",
                       lambda c: _lane_floats(w, c) <= REGISTER_FLOATS and
                       (_lane_floats(w, c) + REGISTER_OVERHEAD) * threads(c) <= max(target.register_file, 1)),
        ),
    )


def default_config(w, target) -> dict:
    """wgmma tensor cores from 64 query rows where they apply (attention_wgmma's default); else mma.sync where it
    applies (attention_mma's); else WMMA where it applies and there are 64 query rows or more; else the tiled SIMT
    engine where it is offered (attention_tiled's); else the loop-IR SIMT kernel with about 8 columns a lane, 128
    threads a block and the largest tile of keys that fits. In a union, completed by the engine's part's pins
    (the engine knob and the other engines' knobs)."""
    engine = _engine_of(w, target, None)
    own = _simt_default(w, target) if engine == "simt" else TEMPLATE_ENGINES[engine].default_config(w, target)
    pins = next((pins for _part, pins in space(w, target).parts if pins["engine"] == engine), {})
    return {**pins, **own}


def _simt_default(w, target) -> dict:
    tpr = min(WARP, pow2_ceil(-(-w["head_dim"] // 8)))
    rpb = min(max(1, 128 // tpr), max(pow2_ceil(w["seq_q"]), WARP // tpr))
    space_ = simt_space(w, target)
    for tile in (32, 16, 8):
        config = {"threads_per_row": tpr, "rows_per_block": rpb, "kv_tile": tile}
        if space_.is_valid(config):
            return config
    return next(iter(space_))


def schedule(w, config, target) -> S.Module:
    engine = _engine_of(w, target, config)
    if engine != "simt":
        return TEMPLATE_ENGINES[engine].schedule(w, config, target)
    H, Sq, Skv, D = w["heads"], w["seq_q"], w["seq_kv"], w["head_dim"]
    tpr, rpb, T = config["threads_per_row"], config["rows_per_block"], config["kv_tile"]
    Q, K, V, O = attention_tensors(w)
    ncol = _lane_columns(w, config)
    tiles = E.ceil_div(Sq, rpb)
    b = IRBuilder()
    with b.loop("bx", H * tiles, S.ForKind.BLOCK_X) as bx, \
            b.loop("ty", rpb, S.ForKind.THREAD_Y) as ty, \
            b.loop("tx", tpr, S.ForKind.THREAD_X) as tx, \
            b.allocate("Ks", "float32", (T * D,), S.Scope.SHARED) as Ks, \
            b.allocate("Vs", "float32", (T * D,), S.Scope.SHARED) as Vs, \
            b.allocate("q", "float32", (ncol,), S.Scope.LOCAL) as q, \
            b.allocate("acc", "float32", (ncol,), S.Scope.LOCAL) as acc, \
            b.allocate("sc", "float32", (T,), S.Scope.LOCAL) as sc, \
            b.allocate("st", "float32", (2,), S.Scope.LOCAL) as st, \
            b.let("h", bx // tiles) as h, b.let("i0", (bx % tiles) * rpb) as i0, b.let("i", i0 + ty) as i:
        row = E.min_(i, Sq - 1) if Sq % rpb else i  # rows past the end read the last one: loads stay inside
        columns = [tx + t * tpr for t in range(ncol)]
        inside = [col < D if (t + 1) * tpr > D else None for t, col in enumerate(columns)]
        # the columns the lane reads: clamped into the row where a column may lie past head_dim
        reads = [col if inside[t] is None else E.min_(col, D - 1) for t, col in enumerate(columns)]
        for t, col in enumerate(reads):  # the lane's query part; 0 past head_dim, so its products vanish
            value = Q[(h * Sq + row) * D + col]
            b.store(q, t, E.select(inside[t], value, E.FloatImm(0.0)) if inside[t] is not None else value)
            b.store(acc, t, E.FloatImm(0.0))
        b.store(st, 0, E.FloatImm(FLOAT_LOWEST))  # running max
        b.store(st, 1, E.FloatImm(0.0))  # running sum of exp(score - max)
        seen = E.min_(Skv, i0 + rpb) if w["causal"] else Skv  # keys some row of the block sees
        steps = (seen + (T - 1)) // T if w["causal"] else E.ceil_div(Skv, T)
        with b.loop("kt", steps) as kt, b.let("j0", kt * T) as j0:
            _stage(b, w, config, K, Ks, V, Vs, h, j0, ty * tpr + tx)
            b.barrier()
            _scores(b, w, config, Ks, q, sc, j0, i, reads)
            _accumulate(b, w, config, Vs, sc, st, acc, j0, reads)
            b.barrier()  # every row is done with this tile before the next one overwrites it
        _store(b, w, config, O, acc, st, h, i, columns, inside)
    func = S.PrimFunc("attention_cuda", (Q, K, V, O), b.get())
    return S.Module("attention", (func,), (Q, K, V, O), (), 3)


def _stage(b: IRBuilder, w, config, K, Ks, V, Vs, h, j0, tid) -> None:
    """Ks, Vs = the tile's key and value rows as float32 (0 past the end of the head), one element per thread per
    pass: consecutive threads, consecutive elements of a row."""
    Skv, D, T = w["seq_kv"], w["head_dim"], config["kv_tile"]
    nthreads = config["threads_per_row"] * config["rows_per_block"]
    passes = E.ceil_div(T * D, nthreads)
    with b.loop("p", passes) as p, b.let("e", p * nthreads + tid) as e:
        def copy():
            with b.let("jr", e // D) as jr, b.let("jd", e % D) as jd, b.let("jk", j0 + jr) as jk:
                at = (h * Skv + (E.min_(jk, Skv - 1) if Skv % T else jk)) * D + jd
                for src, dst in ((K, Ks), (V, Vs)):
                    value = src[at]
                    b.store(dst, e, E.select(jk < Skv, value, E.FloatImm(0.0)) if Skv % T else value)

        if (T * D) % nthreads:
            with b.if_(e < T * D):
                copy()
        else:
            copy()


def _scores(b: IRBuilder, w, config, Ks, q, sc, j0, i, reads) -> None:
    """sc[jj] = scale * q . key jj in every lane of the row's group (-inf where the key is hidden)."""
    Skv, D, T, tpr = w["seq_kv"], w["head_dim"], config["kv_tile"], config["threads_per_row"]
    with b.loop("jj", T) as jj:
        terms = [q[t] * Ks[jj * D + col] for t, col in enumerate(reads)]
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        b.store(sc, jj, total)
        off = tpr // 2
        while off >= 1:  # the group's butterfly: all 32 lanes of the warp shuffle, every group at once
            b.store(sc, jj, sc[jj] + E.call("shfl_xor", sc[jj], off))
            off //= 2
        hidden = []
        if Skv % T:
            hidden.append(j0 + jj < Skv)
        if w["causal"]:
            hidden.append(j0 + jj <= i)
        value = sc[jj] * E.FloatImm(scale(w))
        if hidden:
            value = E.select(hidden[0] if len(hidden) == 1 else hidden[0] & hidden[1], value, E.FloatImm(NEG_INF))
        b.store(sc, jj, value)


def _accumulate(b: IRBuilder, w, config, Vs, sc, st, acc, j0, reads) -> None:
    """The tile's max, one rescale of the running sum and accumulators, then exp(score - max) V added."""
    D, T = w["head_dim"], config["kv_tile"]
    with b.allocate("tmax", "float32", (1,), S.Scope.LOCAL) as tmax:
        b.store(tmax, 0, st[0])
        with b.loop("jm", T) as jm:
            b.store(tmax, 0, E.max_(tmax[0], sc[jm]))
        with b.let("alpha", E.call("exp", st[0] - tmax[0]), "float32") as alpha:
            b.store(st, 0, tmax[0])
            b.store(st, 1, st[1] * alpha)
            for t in range(len(reads)):
                b.store(acc, t, acc[t] * alpha)
        with b.loop("jp", T) as jp, b.let("pj", E.call("exp", sc[jp] - st[0]), "float32") as pj:
            b.store(st, 1, st[1] + pj)
            for t, col in enumerate(reads):
                b.store(acc, t, acc[t] + pj * Vs[jp * D + col])


def _store(b: IRBuilder, w, config, O, acc, st, h, i, columns, inside) -> None:
    """The row's output columns, acc / sum, where the row and column are inside the head."""
    Sq, D = w["seq_q"], w["head_dim"]
    with b.let("inv", E.FloatImm(1.0) / st[1], "float32") as inv:
        def write():
            for t, col in enumerate(columns):
                if inside[t] is None:
                    b.store(O, (h * Sq + i) * D + col, acc[t] * inv)
                else:
                    with b.if_(inside[t]):
                        b.store(O, (h * Sq + i) * D + col, acc[t] * inv)

        if Sq % config["rows_per_block"]:
            with b.if_(i < Sq):
                write()
        else:
            write()
