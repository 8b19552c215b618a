"""What cuDNN reaches on one conv2d per dtype and memory layout: the reference a tensor-core conv template must meet.

PyTorch's conv2d with cudnn.benchmark = True (TF32 off for float32), timed with triton's do_bench (L2 flushed
before every call), on NCHW tensors (what the op takes) and channels_last ones (cuDNN's native tensor-core layout),
with the NCHW<->NHWC transposes timed on their own. Nothing is asserted; the table goes to stdout, JSON to --out.

  On the GPU machine:  python3 benchmarks/cudnn_conv_reference.py --out $OUT/cudnn.json
"""
from __future__ import annotations

import argparse
import json

SHAPE = dict(N=32, C=256, H=14, W=14, K=256, R=3, S=3, stride=1, pad=1)


def main() -> None:
    import torch
    from triton.testing import do_bench

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default=",".join(f"{k}={v}" for k, v in SHAPE.items()))
    ap.add_argument("--out")
    args = ap.parse_args()
    s = {k: int(v) for k, v in (kv.split("=") for kv in args.shape.split(","))}
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    P = (s["H"] + 2 * s["pad"] - s["R"]) // s["stride"] + 1
    Q = (s["W"] + 2 * s["pad"] - s["S"]) // s["stride"] + 1
    flops = 2.0 * s["N"] * s["K"] * P * Q * s["C"] * s["R"] * s["S"]
    rows = []
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        x = torch.randn(s["N"], s["C"], s["H"], s["W"], device="cuda", dtype=dtype)
        w = torch.randn(s["K"], s["C"], s["R"], s["S"], device="cuda", dtype=dtype)
        for layout in ("nchw", "channels_last"):
            xx, ww = (x, w) if layout == "nchw" else (x.to(memory_format=torch.channels_last),
                                                      w.to(memory_format=torch.channels_last))
            fn = lambda xx=xx, ww=ww: torch.nn.functional.conv2d(xx, ww, stride=s["stride"], padding=s["pad"])  # noqa: E731
            fn()
            ms = do_bench(fn, warmup=50, rep=300, quantiles=[0.5, 0.2, 0.8])
            rows.append(dict(dtype=str(dtype)[6:], layout=layout, ms=ms, tflops=flops / ms[0] / 1e9))
        to_nhwc = lambda x=x: x.to(memory_format=torch.channels_last)  # noqa: E731
        copy_ms = do_bench(to_nhwc, quantiles=[0.5, 0.2, 0.8])
        rows.append(dict(dtype=str(dtype)[6:], layout="x nchw->nhwc copy", ms=copy_ms, tflops=0.0))
    print(f"conv2d {s} on {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for r in rows:
        print(f"  {r['dtype']:9s} {r['layout']:18s} {r['ms'][0] * 1e3:8.1f} us [{r['ms'][1] * 1e3:.1f}, "
              f"{r['ms'][2] * 1e3:.1f}]  {r['tflops']:6.1f} TFLOP/s")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(shape=s, device=torch.cuda.get_device_name(), rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
