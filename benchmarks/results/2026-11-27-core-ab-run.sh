#!/bin/bash
# 2026-11-27-core-ab-run.sh BINDIR OUT [ROUNDS]: issue 33's core changes (Lease.End and its ending
# field, Decision.Shed, OutcomeShed; main at 1a259cc) against dfc0b54, the commit before them,
# ABBA: odd rounds run base first, even rounds new first, -count 1 each. BINDIR holds go test -c
# binaries: {base,new}.test (benchmarks/: BenchmarkDecision and BenchmarkHTTP, the peers' rows
# included) and {base,new}-core.test (core/: the hot key and Zipf rows, and the concurrency
# limit whose Lease grew a field).
set -euo pipefail
bin=$1; out=$2; n=${3:-6}
for f in bench core; do : > "$out/$f-base.txt"; : > "$out/$f-new.txt"; done
for i in $(seq "$n"); do
  if (( i % 2 )); then order="base new"; else order="new base"; fi
  for v in $order; do
    (cd /work/main/benchmarks && "$bin/$v.test" -test.run '^$' -test.bench '^(BenchmarkDecision|BenchmarkHTTP)$' -test.benchmem -test.count 1 -test.benchtime 100ms >> "$out/bench-$v.txt" 2>&1)
    "$bin/$v-core.test" -test.run '^$' -test.bench '^(BenchmarkHotSeq|BenchmarkHotPar|BenchmarkZipfPar|BenchmarkConcurrency.*)$' -test.benchmem -test.count 1 -test.benchtime 200ms >> "$out/core-$v.txt" 2>&1
  done
done
for f in bench core; do ~/go/bin/benchstat "$out/$f-base.txt" "$out/$f-new.txt" > "$out/$f-benchstat.txt"; done
