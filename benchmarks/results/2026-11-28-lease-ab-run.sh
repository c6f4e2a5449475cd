#!/bin/bash
# 2026-11-28-lease-ab-run.sh BINDIR OUT [ROUNDS]: core.Lease as a value over a recycled record
# (core.Holder; Keyed, Adaptive and BBR pool their records, redisstore's lease is its own Holder)
# against 6156c66, ABBA: odd rounds run base first, even rounds new first, -count 1 each.
# BINDIR holds go test -c binaries built in each tree: {base,new}-{core,overload,httpmw,grpcmw,
# redisstore,bench}.test. Rows: core's decision benchmarks (Decision grew by a word), overload's
# admissions, httpmw's BenchmarkOverhead/Denied/WriteHeaders, grpcmw's BenchmarkUnary/Layered,
# redisstore's BenchmarkConcurrencyRedis, and the benchmarks module's BenchmarkDecision,
# BenchmarkHTTP and BenchmarkGRPC, peers included.
set -euo pipefail
bin=$1; out=$2; n=${3:-6}
sets="core overload httpmw grpcmw redisstore bench"
for f in $sets; do : > "$out/$f-base.txt"; : > "$out/$f-new.txt"; done
for i in $(seq "$n"); do
  if (( i % 2 )); then order="base new"; else order="new base"; fi
  for v in $order; do
    "$bin/$v-core.test" -test.run '^$' -test.bench '^(BenchmarkAlgorithmAdmit|BenchmarkHotPar|BenchmarkZipfPar|BenchmarkStack|BenchmarkConcurrency)$' -test.benchmem -test.count 1 -test.benchtime 300ms >> "$out/core-$v.txt" 2>&1
    "$bin/$v-overload.test" -test.run '^$' -test.bench '^(BenchmarkAdaptiveAllow|BenchmarkAdaptiveAllowParallel|BenchmarkAdaptiveAcquire|BenchmarkCoreConcurrency|BenchmarkCoreConcurrencyParallel|BenchmarkBBRAdmit|BenchmarkStaticConcurrency)$' -test.benchmem -test.count 1 -test.benchtime 300ms >> "$out/overload-$v.txt" 2>&1
    "$bin/$v-httpmw.test" -test.run '^$' -test.bench '^(BenchmarkOverhead|BenchmarkDenied|BenchmarkWriteHeaders)$' -test.benchmem -test.count 1 -test.benchtime 300ms >> "$out/httpmw-$v.txt" 2>&1
    "$bin/$v-grpcmw.test" -test.run '^$' -test.bench '^(BenchmarkUnary|BenchmarkLayered)$' -test.benchmem -test.count 1 -test.benchtime 300ms >> "$out/grpcmw-$v.txt" 2>&1
    "$bin/$v-redisstore.test" -test.run '^$' -test.bench '^BenchmarkConcurrencyRedis$' -test.benchmem -test.count 1 -test.benchtime 2000x >> "$out/redisstore-$v.txt" 2>&1
    (cd /work/main/benchmarks && "$bin/$v-bench.test" -test.run '^$' -test.bench '^(BenchmarkDecision|BenchmarkHTTP|BenchmarkGRPC)$' -test.benchmem -test.count 1 -test.benchtime 20000x >> "$out/bench-$v.txt" 2>&1)
  done
done
for f in $sets; do ~/go/bin/benchstat "$out/$f-base.txt" "$out/$f-new.txt" > "$out/$f-benchstat.txt"; done
