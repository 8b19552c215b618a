"""attention: O = softmax(Q K^T / sqrt(head_dim), causal mask optional) V, one independent problem per head."""
from __future__ import annotations

import math

import numpy as np

from compiler_core import te
from compiler_core.ir.expr import FloatImm, call, cast, select
from compiler_core.ops import error_models, hard_inputs
from compiler_core.ops.base import OpDef, dtype_param
from compiler_core.workload import Param

MAX_HEAD_DIM = 256  # what one thread block keeps of a query row; FlashAttention and cuDNN stop there too
HEADS = Param("heads", hi=4096, doc="independent attention problems (batch x heads)")
SEQ_Q = Param("seq_q", hi=65536, doc="query rows per head")
SEQ_KV = Param("seq_kv", hi=65536, doc="key and value rows per head")
HEAD_DIM = Param("head_dim", hi=MAX_HEAD_DIM, doc="length of each query, key and value row")
CAUSAL = Param("causal", lo=0, hi=1, default=0,
               doc="1: query i attends to keys 0..i only (PyTorch's is_causal, aligned at the top left)")
REFERENCE_BLOCK = 1 << 22  # float64 scores the reference and the tolerance hold at once (32 MiB)


def scale(w) -> float:
    """The scores' factor, 1 / sqrt(head_dim), as the float32 the kernels multiply by."""
    return float(np.float32(1.0 / math.sqrt(w["head_dim"])))


def _define(w):
    H, Sq, Skv, D, dt = w["heads"], w["seq_q"], w["seq_kv"], w["head_dim"], w.dtype
    Q = te.placeholder("Q", (H, Sq, D), dt)
    K = te.placeholder("K", (H, Skv, D), dt)
    V = te.placeholder("V", (H, Skv, D), dt)
    d = te.reduce_axis(D, "d")
    j1, j2, j3 = te.reduce_axis(Skv, "j1"), te.reduce_axis(Skv, "j2"), te.reduce_axis(Skv, "j3")

    def score(h, i, j):
        dot = te.sum_(cast("float32", Q[h, i, d.var]) * cast("float32", K[h, j, d.var]), d) * FloatImm(scale(w))
        return select(j <= i, dot, FloatImm(float("-inf"))) if w["causal"] else dot

    S = te.compute("S", (H, Sq, Skv), score)
    mx = te.compute("rowmax", (H, Sq), lambda h, i: te.max_reduce(S[h, i, j1.var], j1))
    den = te.compute("rowsum", (H, Sq), lambda h, i: te.sum_(call("exp", S[h, i, j2.var] - mx[h, i]), j2))
    O = te.compute("O", (H, Sq, D), lambda h, i, e: cast(dt, te.sum_(
        call("exp", S[h, i, j3.var] - mx[h, i]) * cast("float32", V[h, j3.var, e]), j3) / den[h, i]), dt)
    return [Q, K, V], [O]


def row_blocks(w, heads: int):
    """(head, query rows) blocks of `heads` heads whose float64 scores stay within REFERENCE_BLOCK, in order (the
    reference and the tolerance of a verify block see only its heads)."""
    rows = max(1, REFERENCE_BLOCK // max(w["seq_kv"], 1))
    for h in range(heads):
        for start in range(0, w["seq_q"], rows):
            yield h, slice(start, min(start + rows, w["seq_q"]))


def scores(w, q: np.ndarray, k: np.ndarray, rows: slice) -> np.ndarray:
    """float64 scores of query rows `rows` of one head (q: those rows), -inf where the causal mask hides a key."""
    s = (q @ k.T) * scale(w)
    if w["causal"]:
        i = np.arange(rows.start, rows.stop)[:, None]
        s = np.where(np.arange(k.shape[0])[None, :] <= i, s, -np.inf)
    return s


def _reference(w, ins):
    q, k, v = (a.astype(np.float64) for a in ins)
    out = np.empty(q.shape[:2] + (v.shape[2],))
    for h, rows in row_blocks(w, q.shape[0]):
        s = scores(w, q[h, rows], k[h], rows)
        p = np.exp(s - s.max(axis=1, keepdims=True))
        out[h, rows] = (p @ v[h]) / p.sum(axis=1, keepdims=True)
    return [out]


ATTENTION = OpDef(
    name="attention",
    doc="O[h,i] = softmax(Q[h,i] K[h]^T / sqrt(head_dim)) V[h]; causal=1 masks keys after the query's index",
    params=(HEADS, SEQ_Q, SEQ_KV, HEAD_DIM, CAUSAL, dtype_param()),
    define=_define,
    reference=_reference,
    # two products of seq_q x seq_kv x head_dim, halved under the mask (as FlashAttention counts them)
    flops=lambda w: 4 * w["heads"] * w["seq_q"] * w["seq_kv"] * w["head_dim"] // (2 if w["causal"] else 1),
    tolerance=error_models.attention,
    hard_inputs=hard_inputs.attention,
    row_split=(True, True, True),
)
