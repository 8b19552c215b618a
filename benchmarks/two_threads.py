"""Imported first by the A/B scripts that time our kernels against PyTorch and numpy on 2 threads: BLAS and OpenMP
read their thread counts when they load, so these are set before numpy or torch is imported (unless already set)."""
import os

for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_var, "2")
os.environ.setdefault("KMP_BLOCKTIME", "0")  # Intel OpenMP's idle threads stop spinning at once
