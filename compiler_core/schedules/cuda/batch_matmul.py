"""CUDA template for batch_matmul: the matmul template (see matmul.py). float32 runs the SIMT GEMM with the batch on
blockIdx.z; the half types run the Hopper TMA + wgmma kernel on sm_90a (3-D tensor maps, the batch folded into its
tile scheduler), else WMMA (the batch on blockIdx.z); stored configs stay on the template whose knobs they have."""
from compiler_core.schedules.cuda.matmul import config_space, default_config, problem, schedule, space

__all__ = ["config_space", "default_config", "problem", "schedule", "space"]
