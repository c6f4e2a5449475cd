#!/bin/bash
# BenchmarkEnvoyRLS: floodgate-ratelimit against envoyproxy/ratelimit on one
# redis-server (see ../README.md, "Envoy's rate-limit service"). 6 rounds,
# one test-binary run each: both services are built and started afresh, and
# their rows alternate. About 12 minutes on 2 cores at BT=3s.
#   bash results/2026-11-26-envoy-rls-run.sh        # from benchmarks/
#   BT=1s OUT=/tmp/rls bash results/2026-11-26-envoy-rls-run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BT=${BT:-3s}
COUNT=${COUNT:-6}
OUT=${OUT:-results/2026-11-26-envoy-rls}
go test -c -o /tmp/envoyrls-bench.test .
{
  echo "# $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD) benchtime $BT count $COUNT"
  echo "# loadavg before: $(cat /proc/loadavg)"
  # One invocation per round (-test.count would repeat each row in place):
  # a round starts both services afresh, and alternates their rows.
  idle() { # percent idle over one second
    read -r _ u1 n1 s1 i1 w1 x1 y1 z1 _ < /proc/stat
    sleep 1
    read -r _ u2 n2 s2 i2 w2 x2 y2 z2 _ < /proc/stat
    local busy=$(( (u2+n2+s2+x2+y2+z2) - (u1+n1+s1+x1+y1+z1) )) id=$(( (i2+w2) - (i1+w1) ))
    echo $(( 100 * id / (busy + id) ))
  }
  for r in $(seq "$COUNT"); do
    # The machine is shared: start a round once it is 70 % idle, or after 30 s.
    for try in $(seq 30); do p=$(idle); (( p >= 70 )) && break; done
    echo "# round $r starts $(date -u +%T), idle $p % (try $try)"
    FLOODGATE_REQUIRE_REDIS=1 /tmp/envoyrls-bench.test -test.run '^$' -test.bench EnvoyRLS \
      -test.benchtime "$BT" -test.count 1
    echo "# round $r done $(date -u +%T), loadavg $(cat /proc/loadavg)"
  done
  echo "# loadavg after: $(cat /proc/loadavg)"
} 2>&1 | tee "$OUT-raw.txt"
rm -f /tmp/envoyrls-bench.test
python3 results/2026-11-26-envoy-rls-summary.py "$OUT-raw.txt" | tee "$OUT-summary.txt"
# benchstat, the services side by side: the rows renamed impl=floodgate
# and impl=envoyproxy, and pivoted on impl (unpaired; the summary's ratios
# pair each round's rows).
if command -v benchstat >/dev/null; then
  sed -E 's#^BenchmarkEnvoyRLS/(floodgate|envoyproxy)/#BenchmarkEnvoyRLS/impl=\1/#' "$OUT-raw.txt" |
    benchstat -col /impl - > "$OUT-benchstat.txt"
fi
