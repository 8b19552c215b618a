# The calls that ran (the device tool, from the repository root, with .whl carried), one after another.
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1|tail -2; export PYTHONPATH=/tmp/site:$PWD OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1; python3 -c "import lightgbm" || exit 3
SE="python3 benchmarks/search_efficiency.py --tables '' --strategies model --decided --jobs 16 --seeds 160"
SP=synth-basins-11k12-s32,synth-noisy-8k11-s63,synth-noisy-7k11-s16,synth-basins-12k12-s76
date; timeout 280 $SE --synthetic $SP --options '{"min_train": 24}' --checkpoint $OUT/min_train_24-4spaces-160seeds.jsonl > $OUT/mt24.txt 2>&1
date; timeout 270 $SE --synthetic $SP --options '{"gp_kernel": "fixed", "gp_targets": "runtime", "joint_additive": false, "min_train": 24}' --checkpoint $OUT/bo_start-4spaces-160seeds.jsonl > $OUT/bostart.txt 2>&1
date; wc -l $OUT/*.jsonl
date; timeout 420 python3 benchmarks/search_efficiency.py --synthetic none --strategies model --decided --jobs 16 --seeds 160 --options '{"min_train": 24}' --checkpoint $OUT/min_train_24-tables-160seeds.jsonl
SP="synth-basins-11k12-s32 synth-noisy-8k11-s63"
date; timeout 260 python3 benchmarks/results/2026-11-29-early-window/hybrid.py $OUT/bo_then_model-2spaces-160seeds.jsonl 160 16 $SP > $OUT/h1.txt 2>&1
date; timeout 260 python3 benchmarks/search_efficiency.py --tables '' --strategies model --decided --jobs 16 --seeds 160 --synthetic synth-basins-11k12-s32,synth-noisy-8k11-s63 --options '{"sweep": 0, "epsilon": 0, "gp_until": 48, "gp_settle": 48, "smooth": 1.0, "late_from": 0, "smooth_candidates": 16384, "smooth_batch": 8}' --checkpoint $OUT/model_then_bo-2spaces-160seeds.jsonl > $OUT/h2.txt 2>&1
date; timeout 470 python3 benchmarks/search_efficiency.py --tables '' --strategies model --decided --jobs 16 --seeds 160 --synthetic synth-needle-9k11-s33,synth-noisy-7k11-s16,synth-basins-12k12-s76,synth-needle-13k12-s57,synth-basins-10k12-s51 --options '{"sweep": 0, "epsilon": 0, "gp_until": 48, "gp_settle": 48, "smooth": 1.0, "late_from": 0, "smooth_candidates": 16384, "smooth_batch": 8}' --checkpoint $OUT/model_then_bo-5spaces-160seeds.jsonl > $OUT/h3.txt 2>&1
