#!/bin/bash
# Interleaved A/B of the tuner's hot path: the code before (a checkout in $1) and this tree, $2 rounds, each job a
# process of its own over a fresh SQLite history of 10,000 trials; extra arguments go to tuner_overhead.py.
# Usage: benchmarks/results/2026-11-28-driver-reads/ab.sh OLD_TREE ROUNDS [args...]
old=$(cd "$1" && pwd); rounds=$2; shift 2
new=$(pwd)
for i in $(seq "$rounds"); do
  for tree in "$old" "$new"; do
    echo "== $([ "$tree" = "$new" ] && echo new || echo old) round $i"
    (cd "$tree" && python3 benchmarks/tuner_overhead.py --history 10000 --budget 256 \
      --sections "$@" 2>&1 | grep -E "^\| \{\}|^\| driver:|^\| strategy proposes|^host:")
  done
done
