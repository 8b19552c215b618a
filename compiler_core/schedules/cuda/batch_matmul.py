"""CUDA template for batch_matmul: the matmul template with the batch on blockIdx.z (see matmul.py)."""
from compiler_core.schedules.cuda.matmul import default_config, problem, schedule, space

__all__ = ["default_config", "problem", "schedule", "space"]
