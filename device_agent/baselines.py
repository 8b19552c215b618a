"""The reference library's version of an op, timed beside the head: numpy (OpenBLAS) on CPU, PyTorch on CUDA.

These are what a user would otherwise call; the farm reports its kernels as ratios to them, timed in the same
worker, with the same threads, interleaved with the head (a ratio between different processes or moments of a
shared host is not a number one can trust). An op without an equivalent here has no reference (None).
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import compiler_core as cc
from compiler_core.dtypes import numpy_dtype
from compiler_core.ops import expr_parser

# OpenBLAS's threads spin for 2**28 cycles (~0.1 s) after each call before they sleep, and Intel's OpenMP (MKL
# builds of numpy) for 200 ms: timed interleaved, the kernel after the reference shares its cores with them
# (measured on 2 cores: a 22 ms matmul timed 44 ms right after numpy, and the one after it too). Both libraries
# read these when they load, so worker processes start with them.
QUIET_REFERENCE_ENV = {"OPENBLAS_THREAD_TIMEOUT": "4", "KMP_BLOCKTIME": "0"}


@dataclass(frozen=True)
class Baseline:
    name: str
    run: Callable  # CPU: run(); CUDA: run(stream) on a pycuda stream


# ---- CPU: numpy, float32 -------------------------------------------------------------------------------------
def _np_conv2d(w: cc.Workload, x: np.ndarray, k: np.ndarray) -> Callable[[], None]:
    pad, stride = w["pad"], w["stride"]

    def run() -> None:
        xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))) if pad else x
        win = np.lib.stride_tricks.sliding_window_view(xp, (w["R"], w["S"]), axis=(2, 3))[:, :, ::stride, ::stride]
        np.tensordot(win, k, axes=([1, 4, 5], [1, 2, 3]))  # -> N, P, Q, K (BLAS underneath)

    return run


def _np_softmax(x: np.ndarray, out: np.ndarray) -> Callable[[], None]:
    def run() -> None:
        np.subtract(x, x.max(axis=-1, keepdims=True), out=out)
        np.exp(out, out=out)
        np.divide(out, out.sum(axis=-1, keepdims=True), out=out)
    return run


def _np_layernorm(w: cc.Workload, x: np.ndarray, g: np.ndarray, b: np.ndarray, out: np.ndarray):
    eps = np.float32(float(w["eps"]))

    def run() -> None:
        mean = x.mean(axis=-1, keepdims=True)
        np.subtract(x, mean, out=out)
        var = np.mean(out * out, axis=-1, keepdims=True)
        np.multiply(out, 1.0 / np.sqrt(var + eps), out=out)
        np.multiply(out, g, out=out)
        np.add(out, b, out=out)
    return run


def _np_attention(w: cc.Workload, q: np.ndarray, k: np.ndarray, v: np.ndarray, out: np.ndarray):
    """Scores by batched GEMM, softmax in place, then the second GEMM: what a numpy user writes (it stores the
    heads x seq_q x seq_kv scores, which the template never does)."""
    from compiler_core.ops.attention import scale

    factor = np.float32(scale(w))
    hidden = np.triu(np.ones((w["seq_q"], w["seq_kv"]), bool), 1) if w["causal"] else None

    def run() -> None:
        s = np.matmul(q, k.transpose(0, 2, 1))
        s *= factor
        if hidden is not None:
            s[:, hidden] = -np.inf
        s -= s.max(axis=-1, keepdims=True)
        np.exp(s, out=s)
        s /= s.sum(axis=-1, keepdims=True)
        np.matmul(s, v, out=out)
    return run


def cpu_baseline(w: cc.Workload, inputs: list[np.ndarray]) -> Baseline | None:
    if w.get("dtype", "float32") != "float32":
        return None  # numpy has no fast half-precision GEMM: no fair reference
    outs = [np.empty(s.shape, s.dtype) for s in cc.get_op(w.op).output_specs(w)]
    run: Callable[[], None] | None = None
    if w.op in ("matmul", "batch_matmul"):
        def run() -> None:
            np.matmul(inputs[0], inputs[1], out=outs[0])
    elif w.op == "conv2d":
        run = _np_conv2d(w, *inputs)
    elif w.op == "softmax":
        run = _np_softmax(inputs[0], outs[0])
    elif w.op == "layernorm":
        run = _np_layernorm(w, *inputs, outs[0])
    elif w.op == "reduce_sum":
        def run() -> None:
            np.sum(inputs[0], axis=-1, out=outs[0])
    elif w.op == "transpose":
        def run() -> None:
            np.copyto(outs[0], inputs[0].T)
    elif w.op == "attention":
        run = _np_attention(w, *inputs, outs[0])
    elif w.op == "elementwise":
        tree = expr_parser.parse(w["expr"])
        env = dict(zip(expr_parser.input_names(tree), inputs, strict=True))

        def run() -> None:
            np.copyto(outs[0], expr_parser.to_numpy(tree, env), casting="same_kind")
    return Baseline("numpy", run) if run is not None else None


# ---- CUDA: PyTorch ---------------------------------------------------------------------------------------------
def torch_op(w: cc.Workload, torch, xs: list):
    """PyTorch's version of `w` on the tensors `xs` (inputs in op order) as a zero-argument callable; None for an op
    without one. The agent times it beside the head; the GPU benchmarks time the same reference."""
    F = torch.nn.functional
    if w.op in ("matmul", "batch_matmul"):
        return lambda: torch.matmul(xs[0], xs[1])
    if w.op == "conv2d":
        return lambda: F.conv2d(xs[0], xs[1], stride=w["stride"], padding=w["pad"])
    if w.op == "softmax":
        return lambda: torch.softmax(xs[0], dim=-1)
    if w.op == "layernorm":
        eps = float(w["eps"])
        return lambda: F.layer_norm(xs[0], (w["cols"],), xs[1], xs[2], eps)
    if w.op == "reduce_sum":
        return lambda: xs[0].sum(dim=-1)
    if w.op == "transpose":
        return lambda: xs[0].t().contiguous()
    if w.op == "attention":  # FlashAttention, cuDNN or memory-efficient attention: whichever PyTorch picks
        causal = bool(w["causal"])
        # as (1, heads, seq, dim): the fused kernels take 4-D inputs, a 3-D call falls back to the unfused math
        q, k, v = (x.unsqueeze(0) for x in xs)
        return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal).squeeze(0)
    if w.op == "elementwise":  # eager PyTorch, one kernel per operation: what the chain costs unfused
        tree = expr_parser.parse(w["expr"])
        env = dict(zip(expr_parser.input_names(tree), xs, strict=True))
        consts: dict = {}  # a number as a 0-d tensor of the inputs' dtype, made once: any function takes it
        return lambda: _torch_expr(torch, tree, env, consts)
    return None


def _torch_expr(torch, n, env: dict, consts: dict):
    """The expression tree evaluated with PyTorch's ops on env's tensors (broadcasting the row vectors), in their
    dtype; gelu is the exact (erf) one, as the op defines it."""
    P = expr_parser
    if isinstance(n, P.Num):
        if n.value not in consts:
            like = next(iter(env.values()))
            consts[n.value] = torch.tensor(n.value, dtype=like.dtype, device=like.device)
        return consts[n.value]
    if isinstance(n, P.Name):
        return env[n.id]
    if isinstance(n, P.Neg):
        return -_torch_expr(torch, n.x, env, consts)
    if isinstance(n, P.Bin):
        a, b = _torch_expr(torch, n.a, env, consts), _torch_expr(torch, n.b, env, consts)
        return {"+": torch.add, "-": torch.sub, "*": torch.mul, "/": torch.div}[n.op](a, b)
    args = [_torch_expr(torch, a, env, consts) for a in n.args]
    if n.name in P.BINARY_FUNCS:
        return (torch.maximum if n.name == "max" else torch.minimum)(*args)
    F = torch.nn.functional
    fn = {"relu": F.relu, "gelu": F.gelu, "sigmoid": torch.sigmoid, "silu": F.silu, "tanh": torch.tanh,
          "exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "abs": torch.abs,
          "erf": torch.erf}[n.name]
    return fn(args[0])


def to_torch(torch, a: np.ndarray):
    """A host tensor of the array; bfloat16 (ml_dtypes', which torch.from_numpy does not know) moves as its raw
    16 bits and is reinterpreted as torch.bfloat16: the same values, no conversion."""
    a = np.ascontiguousarray(a)
    if a.dtype == numpy_dtype("bfloat16"):
        return torch.from_numpy(a.view(np.uint16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def warm_cuda_reference(index: int) -> threading.Thread:
    """Imports PyTorch and starts its CUDA runtime on device `index` in a background thread, so the first final
    comparison does not pay seconds of import and initialisation on the measurement's critical path (a job's
    final phase is where the reference is first timed). Without PyTorch it does nothing."""
    def warm() -> None:
        try:
            import torch

            if torch.cuda.is_available():
                torch.zeros(1, device=f"cuda:{index}")
        except Exception:  # noqa: BLE001 - only a head start: cuda_baseline reports what is really wrong
            pass

    thread = threading.Thread(target=warm, name="warm-reference", daemon=True)
    thread.start()
    return thread


def cuda_baseline(w: cc.Workload, inputs: list[np.ndarray], index: int = 0) -> Baseline | None:
    """PyTorch on the worker's device, cuda:`index` (cuDNN autotuning on, TF32 off: the fair fp32 reference);
    None without PyTorch. `run(stream)` enqueues on the pycuda stream, so the same CUDA events time it."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.cuda.set_device(index)  # the stream's device: torch's default would be cuda:0 on every agent
    xs = [to_torch(torch, a).cuda(index) for a in inputs]
    op = torch_op(w, torch, xs)
    if op is None:
        return None
    torch.cuda.synchronize()

    def run(stream) -> None:
        with torch.cuda.stream(torch.cuda.ExternalStream(stream.handle)):
            op()

    return Baseline("torch", run)
