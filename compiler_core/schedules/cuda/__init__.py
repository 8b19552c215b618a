"""CUDA schedule templates, keyed by op name."""
from compiler_core.schedules.cuda import (
    attention,
    batch_matmul,
    conv2d,
    elementwise,
    layernorm,
    matmul,
    reduce_sum,
    softmax,
    transpose,
)

TEMPLATES = {
    "attention": attention,
    "elementwise": elementwise,
    "matmul": matmul,
    "batch_matmul": batch_matmul,
    "conv2d": conv2d,
    "softmax": softmax,
    "layernorm": layernorm,
    "reduce_sum": reduce_sum,
    "transpose": transpose,
}
