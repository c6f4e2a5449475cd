#!/bin/bash
# 2026-11-28-endctx-ab-run.sh BINDIR OUT [ROUNDS]: the adapters end a Lease with the request's own
# context (the holders keep a cancelled one from stopping a release; NewLease's function runs under
# context.WithoutCancel) instead of wrapping it in context.WithoutCancel for every leased request,
# against the commit before (with the new "inflight" rows in both), ABBA: odd rounds run base first,
# even rounds new first, -count 1 each. BINDIR holds go test -c binaries built in each tree:
# {base,new}-{core,httpmw,grpcmw,bench}.test. Rows: core's BenchmarkConcurrency and BenchmarkStack,
# httpmw's BenchmarkOverhead/Denied/WriteHeaders, grpcmw's BenchmarkUnary/Layered, and the benchmarks
# module's BenchmarkDecision, BenchmarkHTTP and BenchmarkGRPC, peers included.
set -euo pipefail
bin=$1; out=$2; n=${3:-6}
sets="core httpmw grpcmw bench"
for f in $sets; do : > "$out/$f-base.txt"; : > "$out/$f-new.txt"; done
for i in $(seq "$n"); do
  if (( i % 2 )); then order="base new"; else order="new base"; fi
  for v in $order; do
    "$bin/$v-core.test" -test.run '^$' -test.bench '^(BenchmarkConcurrency|BenchmarkStack)$' -test.benchmem -test.count 1 -test.benchtime 300ms >> "$out/core-$v.txt" 2>&1
    "$bin/$v-httpmw.test" -test.run '^$' -test.bench '^(BenchmarkOverhead|BenchmarkDenied|BenchmarkWriteHeaders)$' -test.benchmem -test.count 1 -test.benchtime 300ms >> "$out/httpmw-$v.txt" 2>&1
    "$bin/$v-grpcmw.test" -test.run '^$' -test.bench '^(BenchmarkUnary|BenchmarkLayered)$' -test.benchmem -test.count 1 -test.benchtime 300ms >> "$out/grpcmw-$v.txt" 2>&1
    (cd /work/main/benchmarks && "$bin/$v-bench.test" -test.run '^$' -test.bench '^(BenchmarkDecision|BenchmarkHTTP|BenchmarkGRPC)$' -test.benchmem -test.count 1 -test.benchtime 20000x >> "$out/bench-$v.txt" 2>&1)
  done
done
for f in $sets; do ~/go/bin/benchstat "$out/$f-base.txt" "$out/$f-new.txt" > "$out/$f-benchstat.txt"; done
# The recheck (2026-11-28-endctx-ab-recheck-*): httpmw's BenchmarkOverhead alone, 10 rounds ABBA, the same
# binaries: for i in 1..10: run base and new (base first on odd rounds) with -test.bench '^BenchmarkOverhead$'
# -test.benchmem -test.count 1 -test.benchtime 300ms, appending to recheck-{base,new}.txt; then benchstat.
