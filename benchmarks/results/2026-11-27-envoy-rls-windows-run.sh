#!/bin/bash
# BenchmarkEnvoyRLS with three services on one redis-server, their rows
# alternating: floodgate-ratelimit as it starts by default (client-clock
# windows: INCRBY and PEXPIRE, no script), the same binary with
# -client-clock-windows false (the script, the default before), and
# envoyproxy/ratelimit. 6 rounds, each a fresh test-binary run.
#   bash results/2026-11-27-envoy-rls-windows-run.sh      # from benchmarks/
set -euo pipefail
cd "$(dirname "$0")/.."
BT=${BT:-3s}
COUNT=${COUNT:-6}
OUT=${OUT:-results/2026-11-27-envoy-rls-windows}
go test -c -o /tmp/envoyrls-bench.test .
{
  echo "# $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD) benchtime $BT count $COUNT"
  echo "# loadavg before: $(cat /proc/loadavg)"
  for r in $(seq "$COUNT"); do
    echo "# round $r starts $(date -u +%T), loadavg $(cat /proc/loadavg)"
    FLOODGATE_RLS_BENCH_SCRIPT=1 FLOODGATE_REQUIRE_REDIS=1 /tmp/envoyrls-bench.test -test.run '^$' -test.bench EnvoyRLS \
      -test.benchtime "$BT" -test.count 1
    echo "# round $r done $(date -u +%T), loadavg $(cat /proc/loadavg)"
  done
} 2>&1 | tee "$OUT-raw.txt"
rm -f /tmp/envoyrls-bench.test
# The summary pairs floodgate with envoyproxy: once for the default, once
# for the script (its rows renamed floodgate).
grep -v '^BenchmarkEnvoyRLS/floodgate-script/' "$OUT-raw.txt" > "$OUT-default.txt"
grep -v '^BenchmarkEnvoyRLS/floodgate/' "$OUT-raw.txt" | sed 's#^BenchmarkEnvoyRLS/floodgate-script/#BenchmarkEnvoyRLS/floodgate/#' > "$OUT-script.txt"
{
  echo "## floodgate (client-clock windows, the default) against envoyproxy"
  python3 results/2026-11-26-envoy-rls-summary.py "$OUT-default.txt"
  echo
  echo "## floodgate -client-clock-windows false (the script) against envoyproxy"
  python3 results/2026-11-26-envoy-rls-summary.py "$OUT-script.txt"
} | tee "$OUT-summary.txt"
rm -f "$OUT-default.txt" "$OUT-script.txt"
if command -v benchstat >/dev/null; then
  sed -E 's#^BenchmarkEnvoyRLS/(floodgate|floodgate-script|envoyproxy)/#BenchmarkEnvoyRLS/impl=\1/#' "$OUT-raw.txt" |
    benchstat -col /impl - > "$OUT-benchstat.txt"
fi
