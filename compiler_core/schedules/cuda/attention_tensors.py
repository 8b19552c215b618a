"""The tensors every CUDA attention template binds: Q, K, V and O of all heads, flat, in the op's order."""
from __future__ import annotations

from compiler_core.ir import stmt as S


def attention_tensors(w) -> tuple[S.Buffer, S.Buffer, S.Buffer, S.Buffer]:
    """Q (heads x seq_q x head_dim), K and V (heads x seq_kv x head_dim), O (as Q), each one flat buffer."""
    H, Sq, Skv, D, dt = w["heads"], w["seq_q"], w["seq_kv"], w["head_dim"], w.dtype
    Q, K, V = (S.Buffer(f"in_{n}", dt, (H * rows * D,)) for n, rows in (("Q", Sq), ("K", Skv), ("V", Skv)))
    return Q, K, V, S.Buffer("out_O", dt, (H * Sq * D,))
