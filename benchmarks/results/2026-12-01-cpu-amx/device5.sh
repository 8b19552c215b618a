#!/bin/bash
# The defaults as they land: the AMX target's (tiles) against the AVX-512 BF16 target's (FMAs) and PyTorch, two
# pinned cores, five rounds; one GEMM on all 16 cores. Repository root, PYTHONPATH as ../shared/device/README.md says.
set -u
taskset -c 0,1 python3 benchmarks/cpu_ops.py --threads 2 --rounds 5 --seconds 0.2 --default-of avx512bf16 \
    --case 'matmul:M=16,N=4096,K=4096,dtype=bfloat16' --case 'matmul:M=128,N=4096,K=4096,dtype=bfloat16' \
    --case 'matmul:M=512,N=512,K=512,dtype=bfloat16' --case 'matmul:M=1024,N=1024,K=1024,dtype=bfloat16' \
    --case 'matmul:M=2048,N=1024,K=256,dtype=bfloat16' --case 'batch_matmul:batch=8,M=256,N=256,K=256,dtype=bfloat16' \
    --case 'conv2d:N=1,C=256,H=14,W=14,K=256,R=1,S=1,dtype=bfloat16' \
    --case 'conv2d:N=1,C=512,H=7,W=7,K=512,R=3,S=3,pad=1,dtype=bfloat16' \
    --json $OUT/defaults-2cores.json 2>&1 | grep -v '^ *skipped'
timeout 60 python3 benchmarks/cpu_ops.py --rounds 3 --seconds 0.2 --default-of avx512bf16 \
    --case 'matmul:M=2048,N=2048,K=2048,dtype=bfloat16' --json $OUT/defaults-16cores.json 2>&1 | grep -v '^ *skipped'
