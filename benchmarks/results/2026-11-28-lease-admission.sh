#!/bin/bash
# 2026-11-28-lease-admission.sh BINDIR [ROUNDS]: CPU time per operation (user+sys of the test process / N,
# fixed N) of overload's and core's admissions through core.Limiter, before (base-overload.test, 6156c66: a
# *core.Lease allocated per admission) and after (new-overload.test: core.Lease a value over a recycled
# record), interleaved, 7 rounds by default; prints "benchmark-GOMAXPROCS build cpu-ns wall-ns" per run.
set -euo pipefail
bin=$1; n=${2:-7}; N=2000000
run() { # build bench cpus
  local t; t=$( { /usr/bin/time -f "%U %S" "$bin/$1-overload.test" -test.run '^$' -test.bench "^$2\$" \
    -test.benchtime ${N}x -test.cpu "$3" > /tmp/adm-out.txt; } 2>&1 )
  local wall; wall=$(awk '/ns\/op/{print $3; exit}' /tmp/adm-out.txt)
  awk -v t="$t" -v n=$N -v b="$2-$3" -v v="$1" -v w="$wall" 'BEGIN{split(t,a," "); printf "%-32s %-5s %6.0f %8s\n", b, v, (a[1]+a[2])*1e9/n, w}'
}
for i in $(seq "$n"); do
  if (( i % 2 )); then order="base new"; else order="new base"; fi
  for v in $order; do
    run $v BenchmarkAdaptiveAcquire 1
    run $v BenchmarkAdaptiveAllow 1
    run $v BenchmarkAdaptiveAllowParallel 2
    run $v BenchmarkCoreConcurrency 1
    run $v BenchmarkCoreConcurrencyParallel 2
  done
done
