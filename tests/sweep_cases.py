"""The correctness sweep's cases: every op and dtype (float32, float16, bfloat16) on three shapes, one of them
odd-sized."""
from __future__ import annotations

from compiler_core import make_workload

CONFIGS_PER_CASE = 20
HALF_DTYPES = ("float16", "bfloat16")
# The half dtypes run the float32 templates with conversions at loads and stores: fewer configs per case keep
# the sweep's compile time within reach on two cores, and every template still meets each half dtype.
HALF_CONFIGS_PER_CASE = 6

SHAPES = {
    ("matmul", "float32"): [dict(M=64, N=64, K=64), dict(M=67, N=131, K=45), dict(M=128, N=96, K=256)],
    ("matmul", "float16"): [dict(M=64, N=64, K=64), dict(M=67, N=131, K=45), dict(M=128, N=96, K=256)],
    ("batch_matmul", "float32"): [dict(batch=2, M=32, N=32, K=32), dict(batch=3, M=17, N=33, K=45),
                                  dict(batch=4, M=64, N=48, K=40)],
    ("batch_matmul", "float16"): [dict(batch=2, M=32, N=32, K=32), dict(batch=3, M=17, N=33, K=45),
                                  dict(batch=4, M=64, N=48, K=40)],
    ("conv2d", "float32"): [dict(N=1, C=4, H=8, W=8, K=8, R=3, S=3, stride=1, pad=1),
                            dict(N=2, C=3, H=9, W=11, K=5, R=3, S=3, stride=2, pad=1),
                            dict(N=2, C=16, H=14, W=14, K=32, R=1, S=1, stride=1, pad=0)],
    ("softmax", "float32"): [dict(rows=64, cols=128), dict(rows=1000, cols=333), dict(rows=3, cols=4097)],
    ("layernorm", "float32"): [dict(rows=64, cols=128), dict(rows=1000, cols=333), dict(rows=3, cols=4097)],
    ("reduce_sum", "float32"): [dict(rows=64, cols=128), dict(rows=1000, cols=333), dict(rows=3, cols=4097)],
    ("transpose", "float32"): [dict(rows=64, cols=128), dict(rows=333, cols=1000), dict(rows=7, cols=13)],
    ("elementwise", "float32"): [dict(rows=64, cols=128, expr="gelu(x*w+b)", vectors="w,b"),
                                 dict(rows=1000, cols=333, expr="relu(a+b)*c"),
                                 dict(rows=3, cols=7, expr="sigmoid(x)-tanh(y)/2+max(x,y)")],
    ("attention", "float32"): [dict(heads=2, seq_q=64, seq_kv=64, head_dim=64),
                               dict(heads=3, seq_q=33, seq_kv=70, head_dim=13, causal=1),
                               dict(heads=1, seq_q=100, seq_kv=257, head_dim=128, causal=1)],
}


for (_op, _dtype), _shapes in list(SHAPES.items()):
    if _dtype == "float32":
        for _half in HALF_DTYPES:
            SHAPES.setdefault((_op, _half), _shapes)


def configs_per_case(w) -> int:
    return CONFIGS_PER_CASE if w.dtype == "float32" else HALF_CONFIGS_PER_CASE


def sweep_workloads():
    """(id, workload) for every op x dtype x shape."""
    out = []
    for (op, dtype), shapes in SHAPES.items():
        for shape in shapes:
            w = make_workload(op, dict(shape, dtype=dtype))
            out.append((w.key, w))
    return out
