"""CUDA template for batch_matmul: the matmul template with the batch on blockIdx.z (see matmul.py). float16 stays on
WMMA on every target, Hopper's too: gemm_sm90 maps 2-D operands only (3-D tensor maps would lift that)."""
from compiler_core.schedules.cuda.matmul import default_config, problem, schedule, space

__all__ = ["default_config", "problem", "schedule", "space"]
