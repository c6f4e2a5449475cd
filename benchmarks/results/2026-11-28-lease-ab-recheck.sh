#!/bin/bash
# 2026-11-28-lease-ab-recheck.sh BINDIR OUT [ROUNDS]: the recheck of 2026-11-28-lease-ab's
# slower-looking rows in the benchmarks module (BenchmarkHTTP's floodgate rows, BenchmarkDecision's
# floodgate rows) beside peers (echo-limiter, sethvargo, tollbooth) for the machine's drift, ABBA
# as the first run, 10 rounds by default, the same binaries ({base,new}-bench.test).
set -euo pipefail
bin=$1; out=$2; n=${3:-10}
: > "$out/recheck-base.txt"; : > "$out/recheck-new.txt"
for i in $(seq "$n"); do
  if (( i % 2 )); then order="base new"; else order="new base"; fi
  for v in $order; do
    (cd /work/main/benchmarks && "$bin/$v-bench.test" -test.run '^$' -test.bench '^(BenchmarkHTTP|BenchmarkDecision)$/^(floodgate.*|echo-limiter|sethvargo|tollbooth)$' -test.benchmem -test.count 1 -test.benchtime 20000x >> "$out/recheck-$v.txt" 2>&1)
  done
done
~/go/bin/benchstat "$out/recheck-base.txt" "$out/recheck-new.txt" > "$out/recheck-benchstat.txt"
