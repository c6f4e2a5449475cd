#!/bin/bash
# 2026-11-27-fields-ab-run.sh BINDIR OUT [ROUNDS]: this session's changes under httpmw and grpcmw (internal/fields.Cache's recent slot, a client gone measured, internal/tally; new = the session's last main)
# against bfa952d, ABBA: odd rounds run base first, even rounds new first,
# -count 1 each. BINDIR holds go test -c binaries built in each tree: {base,new}-http.test
# (httpmw/), {base,new}-grpc.test (grpcmw/) and {base,new}-bench.test (benchmarks/). Rows:
# httpmw's BenchmarkOverhead, BenchmarkDenied, BenchmarkWriteHeaders; grpcmw's BenchmarkUnary and
# BenchmarkLayered; the benchmarks module's BenchmarkDecision, BenchmarkHTTP and BenchmarkGRPC, peers included.
set -euo pipefail
bin=$1; out=$2; n=${3:-6}
for f in http grpc bench; do : > "$out/$f-base.txt"; : > "$out/$f-new.txt"; done
for i in $(seq "$n"); do
  if (( i % 2 )); then order="base new"; else order="new base"; fi
  for v in $order; do
    "$bin/$v-http.test" -test.run '^$' -test.bench '^(BenchmarkOverhead|BenchmarkDenied|BenchmarkWriteHeaders)$' -test.benchmem -test.count 1 -test.benchtime 500ms >> "$out/http-$v.txt" 2>&1
    "$bin/$v-grpc.test" -test.run '^$' -test.bench '^(BenchmarkUnary|BenchmarkLayered)$' -test.benchmem -test.count 1 -test.benchtime 500ms >> "$out/grpc-$v.txt" 2>&1
    (cd /work/main/benchmarks && "$bin/$v-bench.test" -test.run '^$' -test.bench '^(BenchmarkDecision|BenchmarkHTTP|BenchmarkGRPC)$' -test.benchmem -test.count 1 -test.benchtime 20000x >> "$out/bench-$v.txt" 2>&1)
  done
done
for f in http grpc bench; do ~/go/bin/benchstat "$out/$f-base.txt" "$out/$f-new.txt" > "$out/$f-benchstat.txt"; done
