#!/bin/bash
# The Redis rows of two builds in ABBA rounds: odd rounds run BASE first,
# even rounds NEW first, so that a drift of this shared machine over the
# run falls on both alike; then benchstat. Binaries: go test -c in
# benchmarks/ at each commit. Used for 2026-11-26-batched-redis-*
# (ddfefaf against main at 2214adb, the end of the session, 10 rounds).
# usage: bash results/2026-11-26-abba-redis-run.sh BASE.test NEW.test OUTPREFIX [ROUNDS]
set -euo pipefail
base=$1; new=$2; out=$3; n=${4:-10}
rows='^BenchmarkRedis$/^(ping|floodgate|floodgate-gcra|floodgate-stack2|redis_rate|ulule)$/^(seq|par64)$'
: > "$out-base.txt"; : > "$out.txt"
for i in $(seq "$n"); do
  if (( i % 2 )); then order="base new"; else order="new base"; fi
  for v in $order; do
    if [ "$v" = base ]; then bin=$base; file=$out-base.txt; else bin=$new; file=$out.txt; fi
    "$bin" -test.run '^$' -test.bench "$rows" -test.benchmem -test.count 1 -test.benchtime 2000x >> "$file" 2>&1
  done
done
benchstat "$out-base.txt" "$out.txt" > "$out-benchstat.txt"
