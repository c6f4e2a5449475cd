#!/bin/bash
# 2026-11-27-ahead-ab-run.sh BINDIR OUT [ROUNDS]: issue 32's grants ahead, background asks and
# fair shares (04d4b94) against the session's start (17ef119), ABBA: odd rounds run base first,
# even rounds new first, -count 1 each, so that the drift of this shared machine falls on both
# alike. BINDIR holds go test -c binaries built in each tree: {base,new}-bench.test
# (benchmarks/) and {base,new}-rs.test (redisstore/). Rows: BenchmarkRedis (every row, peers
# included), BenchmarkHotKey (core's in-memory hot key, redisstore call by call, local quota as
# a Limiter and as a Dynamic) and redisstore's BenchmarkMulti.
set -euo pipefail
bin=$1; out=$2; n=${3:-6}
for f in bench hot rs; do : > "$out/$f-base.txt"; : > "$out/$f-new.txt"; done
for i in $(seq "$n"); do
  if (( i % 2 )); then order="base new"; else order="new base"; fi
  for v in $order; do
    "$bin/$v-bench.test" -test.run '^$' -test.bench '^BenchmarkRedis$' -test.benchmem -test.count 1 -test.benchtime 2000x >> "$out/bench-$v.txt" 2>&1
    "$bin/$v-bench.test" -test.run '^$' -test.bench '^BenchmarkHotKey$' -test.benchmem -test.count 1 -test.benchtime 1s >> "$out/hot-$v.txt" 2>&1
    "$bin/$v-rs.test" -test.run '^$' -test.bench '^BenchmarkMulti$' -test.benchmem -test.count 1 -test.benchtime 2000x >> "$out/rs-$v.txt" 2>&1
  done
done
for f in bench hot rs; do ~/go/bin/benchstat "$out/$f-base.txt" "$out/$f-new.txt" > "$out/$f-benchstat.txt"; done
