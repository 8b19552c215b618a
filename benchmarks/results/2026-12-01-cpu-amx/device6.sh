#!/bin/bash
# conv2d's padded copy read in place by AMX's tiles: its tests on the real tiles, then five layers against the default
# and PyTorch, two pinned cores. Repository root, PYTHONPATH as ../shared/device/README.md says.
set -u
timeout 100 python3 -m pytest -q -p no:cacheprovider -n 8 tests/cpu/test_gemm_amx.py 2>&1 | tail -2
T='"dot": "amx", "mr": 32, "nr": 32, "pack_a": 1, "mc": 128, "kc": 512'
timeout 150 taskset -c 0,1 python3 benchmarks/cpu_ops.py --threads 2 --rounds 3 --seconds 0.15 --default-of avx512bf16 \
    --case 'conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,pad=1,dtype=bfloat16' \
    --case 'conv2d:N=8,C=128,H=28,W=28,K=128,R=3,S=3,pad=1,dtype=bfloat16' \
    --case 'conv2d:N=1,C=256,H=14,W=14,K=256,R=1,S=1,dtype=bfloat16' \
    --case 'conv2d:N=1,C=512,H=7,W=7,K=512,R=3,S=3,pad=1,dtype=bfloat16' \
    --case 'conv2d:N=1,C=128,H=28,W=28,K=256,R=3,S=3,stride=2,pad=1,dtype=bfloat16' \
    --variant "padded_tiles={$T, \"b_source\": \"padded\"}" --variant "im2col_tiles={$T, \"b_source\": \"im2col\"}" \
    --json $OUT/conv-padded-2cores.json 2>&1 | grep -v '^ *skipped'
