#!/bin/bash
# B packed per block by each thread for the tiles (b_source 'blocks') against once per call, two pinned cores; then
# the unit and CPU test tiers on this AMX host (where the host's own target is the AMX one). Repository root,
# PYTHONPATH as ../shared/device/README.md says.
set -u
T='"dot": "amx", "mr": 32, "nr": 32, "pack_a": 1, "mc": 128, "kc": 512'
taskset -c 0,1 python3 benchmarks/cpu_ops.py --threads 2 --rounds 3 --seconds 0.2 \
    --case 'matmul:M=512,N=512,K=512,dtype=bfloat16' --case 'matmul:M=1024,N=1024,K=1024,dtype=bfloat16' \
    --case 'matmul:M=128,N=4096,K=4096,dtype=bfloat16' --case 'matmul:M=2048,N=1024,K=256,dtype=bfloat16' \
    --case 'matmul:M=16,N=4096,K=4096,dtype=bfloat16' --case 'matmul:M=64,N=1024,K=1024,dtype=bfloat16' \
    --case 'batch_matmul:batch=8,M=256,N=256,K=256,dtype=bfloat16' \
    --variant "blocks={$T, \"b_source\": \"blocks\"}" --variant "blocks_n={$T, \"b_source\": \"blocks\", \"parallel\": \"n\"}" \
    --variant "packed_n={$T, \"b_source\": \"packed\", \"parallel\": \"n\"}" \
    --json $OUT/blocks-2cores.json 2>&1 | grep -v '^ *skipped'
timeout 400 python3 -m pytest -q -p no:cacheprovider -n 12 tests/unit tests/cpu 2>&1 | tail -12
