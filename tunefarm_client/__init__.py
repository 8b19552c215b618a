"""Python API of a tunefarm: a typed REST client and a loader that turns the best schedule into a kernel.

    from tunefarm_client import TunefarmClient, load_best
    with TunefarmClient("http://127.0.0.1:8080", token) as farm:
        job = farm.create_job("matmul", {"M": 512, "N": 512, "K": 512}, "cpu", trials=64)
        job = farm.wait_for_job(job.id)
        kernel = load_best(farm, "matmul", {"M": 512, "N": 512, "K": 512}, job.device_class)
        C = kernel.run(A, B)[0]

PyTorch users: `tunefarm_client.torch` (the 'torch' extra) turns the same kernel into a custom op on device tensors;
importing tunefarm_client itself never imports torch.
"""
from tunefarm_client.client import TunefarmClient, TunefarmError
from tunefarm_client.loader import CodegenVersionMismatch, LoadedKernel, LoadError, load_best

__all__ = ["CodegenVersionMismatch", "LoadError", "LoadedKernel", "TunefarmClient", "TunefarmError", "load_best"]
