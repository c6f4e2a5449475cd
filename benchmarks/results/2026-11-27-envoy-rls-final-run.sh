#!/bin/bash
# The final figures of issue 31: BenchmarkEnvoyRLS's d3/c64 and z3/c64 rows (three descriptors,
# 64 callers; values in turn, or drawn from a Zipf distribution, s = 1.1, over the same 4,096),
# floodgate-ratelimit as it starts by default against envoyproxy/ratelimit, on one redis-server,
# their rows alternating. 6 rounds, each a fresh test-binary run.
#   bash results/2026-11-27-envoy-rls-final-run.sh      # from benchmarks/
set -euo pipefail
cd "$(dirname "$0")/.."
BT=${BT:-3s}
COUNT=${COUNT:-6}
OUT=${OUT:-results/2026-11-27-envoy-rls-final}
go test -c -o /tmp/envoyrls-bench.test .
{
  echo "# $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD) benchtime $BT count $COUNT"
  for r in $(seq "$COUNT"); do
    echo "# round $r starts $(date -u +%T), loadavg $(cat /proc/loadavg)"
    FLOODGATE_REQUIRE_REDIS=1 /tmp/envoyrls-bench.test \
      -test.run '^$' -test.bench 'EnvoyRLS/.*/(d3|z3)/c64' -test.benchtime "$BT" -test.count 1
    echo "# round $r done $(date -u +%T), loadavg $(cat /proc/loadavg)"
  done
} 2>&1 | tee "$OUT-raw.txt"
rm -f /tmp/envoyrls-bench.test
# The summary pairs floodgate with envoyproxy: once for each of floodgate's services (renamed
# floodgate, the others' rows left out).
{
  for impl in floodgate; do
    echo "## $impl against envoyproxy"
    grep -vE "^BenchmarkEnvoyRLS/floodgate(-script|-lq)?/" "$OUT-raw.txt" > "$OUT-one.txt" || true
    grep -E "^BenchmarkEnvoyRLS/$impl/" "$OUT-raw.txt" | sed "s#^BenchmarkEnvoyRLS/$impl/#BenchmarkEnvoyRLS/floodgate/#" >> "$OUT-one.txt"
    python3 results/2026-11-26-envoy-rls-summary.py "$OUT-one.txt" | sed -n '/^rounds per row/,/^noise/p'
    echo
  done
} | tee "$OUT-summary.txt"
rm -f "$OUT-one.txt"
