#!/bin/bash
# The AMX GEMM on the lent H200 host's Sapphire Rapids Xeon: its tests on the real tiles, then bfloat16 GEMMs and
# convolutions against PyTorch (oneDNN, which uses AMX too) on two pinned cores. Run from the repository root with
# PYTHONPATH set as ../shared/device/README.md says; writes under $OUT.
set -u
grep -o 'amx[a-z_0-9]*' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
lscpu | grep -i 'model name'
gcc --version | head -1
python3 -c "from compiler_core.target import host_isas, amx_permitted; print(host_isas(), amx_permitted())"
[ "${SKIP_TESTS:-0}" = 1 ] || taskset -c 0,1 python3 -m pytest -q -p no:cacheprovider tests/cpu/test_gemm_amx.py tests/cpu/test_gemm_bf16_dot.py \
    tests/cpu/test_cpu_isa_builds.py 2>&1 | tail -8
V=(--variant 'pairs={"dot": "bf16", "pack_a": 1, "b_source": "packed"}'
   --variant 'amx32x32={"dot": "amx", "mr": 32, "nr": 32, "pack_a": 1, "b_source": "packed", "mc": 128, "kc": 512}'
   --variant 'amx32x32k256={"dot": "amx", "mr": 32, "nr": 32, "pack_a": 1, "b_source": "packed", "mc": 64, "kc": 256}'
   --variant 'amx16x48={"dot": "amx", "mr": 16, "nr": 48, "pack_a": 1, "b_source": "packed", "mc": 96, "nc": 768, "kc": 512}')
taskset -c 0,1 python3 benchmarks/cpu_ops.py --threads 2 --rounds 3 --seconds 0.2 \
    --case 'matmul:M=512,N=512,K=512,dtype=bfloat16' --case 'matmul:M=1024,N=1024,K=1024,dtype=bfloat16' \
    --case 'matmul:M=128,N=4096,K=4096,dtype=bfloat16' --case 'matmul:M=2048,N=1024,K=256,dtype=bfloat16' \
    --case 'batch_matmul:batch=8,M=256,N=256,K=256,dtype=bfloat16' "${V[@]}" --json $OUT/matmul-2cores.json 2>&1 | tail -40
