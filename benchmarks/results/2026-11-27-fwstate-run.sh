#!/bin/bash
# 2026-11-27-fwstate-run.sh BINDIR OUT [ROUNDS]: the short form of a Multi's fixed windows
# (h-fwstate, issue 31) against main (3fb03db), ABBA: odd rounds run base first, even rounds new
# first, -count 1 each. BINDIR holds go test -c binaries built in each tree:
# {base,new}-bench.test (benchmarks/) and {base,new}-rs.test (redisstore/). Rows: BenchmarkRedis
# (every row, peers included; srv-µs/op is Redis's CPU per op) and redisstore's BenchmarkMulti.
set -euo pipefail
bin=$1; out=$2; n=${3:-6}
for f in bench rs; do : > "$out/$f-base.txt"; : > "$out/$f-new.txt"; done
for i in $(seq "$n"); do
  if (( i % 2 )); then order="base new"; else order="new base"; fi
  for v in $order; do
    "$bin/$v-bench.test" -test.run '^$' -test.bench '^BenchmarkRedis$' -test.benchmem -test.count 1 -test.benchtime 2000x >> "$out/bench-$v.txt" 2>&1
    "$bin/$v-rs.test" -test.run '^$' -test.bench '^BenchmarkMulti$' -test.benchmem -test.count 1 -test.benchtime 2000x >> "$out/rs-$v.txt" 2>&1
  done
done
for f in bench rs; do ~/go/bin/benchstat "$out/$f-base.txt" "$out/$f-new.txt" > "$out/$f-benchstat.txt"; done
