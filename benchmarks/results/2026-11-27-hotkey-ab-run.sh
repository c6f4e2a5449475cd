#!/bin/bash
# 2026-11-27-hotkey-ab-run.sh BINDIR OUT [ROUNDS]: BenchmarkHotKey (core's in-memory hot key,
# redisstore with one round trip per call, and with local quota as a Limiter and as a Dynamic)
# before issue 32's grant-loop changes (81e4685) and after, ABBA, -count 1 per binary per round.
# BINDIR holds {base,new}.test, go test -c binaries of benchmarks/ built in each tree.
set -euo pipefail
bin=$1; out=$2; n=${3:-6}
: > "$out/hotkey-base.txt"; : > "$out/hotkey-new.txt"
for i in $(seq "$n"); do
  if (( i % 2 )); then order="base new"; else order="new base"; fi
  for v in $order; do
    "$bin/$v.test" -test.run '^$' -test.bench '^BenchmarkHotKey$' -test.benchmem -test.count 1 -test.benchtime 1s >> "$out/hotkey-$v.txt" 2>&1
  done
done
~/go/bin/benchstat "$out/hotkey-base.txt" "$out/hotkey-new.txt" > "$out/hotkey-benchstat.txt"
