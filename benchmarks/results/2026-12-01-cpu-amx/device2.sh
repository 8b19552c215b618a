#!/bin/bash
# The AMX GEMM with its sums kept in C's float32 block: block sizes, small M, convolutions, against PyTorch; two
# pinned cores, then all 16 on two cases. Run from the repository root (PYTHONPATH as ../shared/device/README.md).
set -u
[ "${SKIP_TESTS:-0}" = 1 ] || taskset -c 0,1 python3 -m pytest -q -p no:cacheprovider tests/cpu/test_gemm_amx.py 2>&1 | tail -3
T='"dot": "amx", "mr": 32, "nr": 32, "pack_a": 1'
M=(--variant "amx_k256_m64={$T, \"b_source\": \"packed\", \"mc\": 64, \"kc\": 256}"
   --variant "amx_k512_m128={$T, \"b_source\": \"packed\", \"mc\": 128, \"kc\": 512}"
   --variant "amx_k1024_m128={$T, \"b_source\": \"packed\", \"mc\": 128, \"kc\": 1024}"
   --variant "amx_k512_m256={$T, \"b_source\": \"packed\", \"mc\": 256, \"kc\": 512}")
taskset -c 0,1 python3 benchmarks/cpu_ops.py --threads 2 --rounds 3 --seconds 0.2 \
    --case 'matmul:M=512,N=512,K=512,dtype=bfloat16' --case 'matmul:M=1024,N=1024,K=1024,dtype=bfloat16' \
    --case 'matmul:M=128,N=4096,K=4096,dtype=bfloat16' --case 'matmul:M=2048,N=1024,K=256,dtype=bfloat16' \
    --case 'matmul:M=16,N=4096,K=4096,dtype=bfloat16' --case 'matmul:M=4,N=4096,K=4096,dtype=bfloat16' \
    --case 'matmul:M=64,N=1024,K=1024,dtype=bfloat16' \
    --case 'batch_matmul:batch=8,M=256,N=256,K=256,dtype=bfloat16' "${M[@]}" --json $OUT/matmul-2cores.json 2>&1 | grep -v '^ *skipped'
C=(--variant "amx_k256_m64={$T, \"b_source\": \"im2col\", \"mc\": 64, \"kc\": 256}"
   --variant "amx_k512_m128={$T, \"b_source\": \"im2col\", \"mc\": 128, \"kc\": 512}"
   --variant "amx_k1024_m128={$T, \"b_source\": \"im2col\", \"mc\": 128, \"kc\": 1024}")
taskset -c 0,1 python3 benchmarks/cpu_ops.py --threads 2 --rounds 3 --seconds 0.2 \
    --case 'conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,pad=1,dtype=bfloat16' \
    --case 'conv2d:N=8,C=128,H=28,W=28,K=128,R=3,S=3,pad=1,dtype=bfloat16' \
    --case 'conv2d:N=1,C=256,H=14,W=14,K=256,R=1,S=1,dtype=bfloat16' \
    --case 'conv2d:N=1,C=512,H=7,W=7,K=512,R=3,S=3,pad=1,dtype=bfloat16' \
    --case 'conv2d:N=4,C=3,H=224,W=224,K=64,R=7,S=7,stride=2,pad=3,dtype=bfloat16' \
    "${C[@]}" --json $OUT/conv-2cores.json 2>&1 | grep -v '^ *skipped'
python3 benchmarks/cpu_ops.py --rounds 3 --seconds 0.2 --case 'matmul:M=2048,N=2048,K=2048,dtype=bfloat16' \
    --variant "amx_k512_m128={$T, \"b_source\": \"packed\", \"mc\": 128, \"kc\": 512}" --json $OUT/all-cores-matmul.json 2>&1 | grep -v '^ *skipped'
python3 benchmarks/cpu_ops.py --rounds 3 --seconds 0.2 --case 'conv2d:N=8,C=128,H=28,W=28,K=128,R=3,S=3,pad=1,dtype=bfloat16' \
    --variant "amx_k512_m128={$T, \"b_source\": \"im2col\", \"mc\": 128, \"kc\": 512}" --json $OUT/all-cores-conv.json 2>&1 | grep -v '^ *skipped'
