# The calls that ran (the device tool, from the repository root, with .whl carried), one after another.
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1|tail -2; export PYTHONPATH=/tmp/site:$PWD OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1; python3 -c "import lightgbm" || exit 3
SE="python3 benchmarks/search_efficiency.py --strategies model --decided --jobs 16"
SHORT=synth-basins-11k12-s32,synth-noisy-7k11-s16,synth-noisy-8k11-s63,synth-needle-9k11-s33,synth-basins-12k12-s76,synth-basins-10k12-s51
TIGHT=synth-basins-6k10-s38,synth-basins-12k13-s66,synth-needle-11k11-s52,synth-basins-9k11-s21,synth-noisy-9k11-s53,synth-basins-10k11-s71,synth-noisy-10k12-s26,synth-basins-10k13-s12
# 1. ungated (the filter in basins.sweeps removed)
timeout 540 $SE --seeds 160 --tables '' --synthetic $SHORT --options '{"sweep_pairs": 16}' --checkpoint $OUT/runs-ungated-short6-160seeds.jsonl
# 2. gated (then the default with knob features, hence --options {})
timeout 400 $SE --seeds 160 --tables '' --synthetic $SHORT --options '{}' --checkpoint $OUT/runs-gated-short6-160seeds.jsonl
timeout 60 $SE --seeds 160 --tables 'benchmarks/data/kt-*' --synthetic none --options '{}' --checkpoint $OUT/runs-gated-kt-160seeds.jsonl
timeout 240 $SE --seeds 160 --tables '' --synthetic $TIGHT --options '{}' --checkpoint $OUT/runs-gated-tight8-160seeds.jsonl
# 3. gated, the other 36 synthetic spaces of the 72 at 40 seeds
REST=synth-basins-12k12-s2,synth-basins-7k10-s56,synth-basins-9k12-s62,synth-invalid-10k11-s35,synth-invalid-11k11-s64,synth-invalid-11k12-s24,synth-invalid-12k11-s74,synth-invalid-12k12-s55,synth-invalid-15k13-s5,synth-invalid-9k10-s15,synth-needle-10k11-s3,synth-needle-11k12-s72,synth-needle-12k11-s61,synth-needle-12k12-s13,synth-needle-13k12-s57,synth-needle-14k12-s34,synth-needle-15k13-s23,synth-needle-20k15-s4,synth-needle-8k9-s14,synth-needle-9k10-s22,synth-needle-9k10-s65,synth-needle-9k11-s77,synth-noisy-10k10-s67,synth-noisy-11k12-s58,synth-noisy-11k12-s78,synth-noisy-12k13-s37,synth-noisy-5k8-s6,synth-noisy-6k9-s25,synth-noisy-8k10-s36,synth-noisy-9k10-s73,synth-smooth-6k9-s1,synth-smooth-7k10-s75,synth-smooth-7k11-s31,synth-smooth-8k10-s11,synth-smooth-8k11-s54,synth-smooth-9k12-s68
timeout 540 $SE --seeds 40 --tables '' --synthetic $REST --options '{"sweep_pairs": 16}' --checkpoint $OUT/runs-gated-rest36-40seeds.jsonl
# 4. the ring ranked by the fitted GP (after `git apply pairs_by_fitted.patch`)
SEF="$SE --options {\"sweep_pairs\":16,\"pairs_by\":\"fitted\"}"
timeout 230 $SEF --seeds 80 --tables '' --synthetic $SHORT --checkpoint $OUT/runs-fitted-short6-80seeds.jsonl
timeout 100 $SEF --seeds 40 --tables '' --synthetic synth-needle-8k9-s14,synth-needle-12k11-s61,synth-invalid-15k13-s5 --checkpoint $OUT/runs-fitted-slowed3-40seeds.jsonl
