"""Tuned kernels as PyTorch custom ops (the optional extra: pip install 'tunefarm[torch]').

    from tunefarm_client.torch import custom_op, load_best_op
    matmul = load_best_op(farm, "matmul", {"M": 512, "N": 512, "K": 512, "dtype": "float16"}, device_class)
    C = matmul(A, B)                  # new tensor, on A's device, on the current CUDA stream
    matmul(A, B, out=C)               # in place
    torch.compile(lambda a, b: matmul(a, b).relu(), fullgraph=True)

`custom_op(kernel)` does the same for any compiled compiler_core Kernel; `run_dlpack(op, *arrays)` runs one on
other frameworks' arrays. Importing tunefarm_client does not import torch: only this subpackage does.
"""
from tunefarm_client.torch.dlpack import as_tensor, run_dlpack
from tunefarm_client.torch.ops import NAMESPACE, KernelOp, custom_op, load_best_op, op_name
from tunefarm_client.torch.runner import DTYPES, TorchKernel, torch_dtype

__all__ = ["DTYPES", "NAMESPACE", "KernelOp", "TorchKernel", "as_tensor", "custom_op", "load_best_op", "op_name",
           "run_dlpack", "torch_dtype"]
