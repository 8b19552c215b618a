#!/bin/bash
# The tiles' default split and B's packing (once per call, or per block by each thread), five rounds, two pinned
# cores; then the CPU test tier on this AMX host. Repository root, PYTHONPATH as ../shared/device/README.md says.
set -u
T='"dot": "amx", "mr": 32, "nr": 32, "pack_a": 1, "mc": 128, "kc": 512'
taskset -c 0,1 python3 benchmarks/cpu_ops.py --threads 2 --rounds 5 --seconds 0.2 \
    --case 'matmul:M=16,N=4096,K=4096,dtype=bfloat16' --case 'matmul:M=64,N=4096,K=4096,dtype=bfloat16' \
    --case 'matmul:M=128,N=4096,K=4096,dtype=bfloat16' --case 'matmul:M=512,N=512,K=512,dtype=bfloat16' \
    --case 'matmul:M=1024,N=1024,K=1024,dtype=bfloat16' --case 'matmul:M=2048,N=1024,K=256,dtype=bfloat16' \
    --variant "packed_m={$T, \"b_source\": \"packed\", \"parallel\": \"m\"}" \
    --variant "packed_n={$T, \"b_source\": \"packed\", \"parallel\": \"n\"}" \
    --variant "blocks_n={$T, \"b_source\": \"blocks\", \"parallel\": \"n\"}" \
    --json $OUT/split-2cores.json 2>&1 | grep -v '^ *skipped'
timeout 420 python3 -m pytest -q -p no:cacheprovider -n 14 -rfE tests/cpu 2>&1 | grep -E "^(FAILED|ERROR)|passed|failed" | head -30
