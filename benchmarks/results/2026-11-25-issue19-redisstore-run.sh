#!/bin/bash
# 6 interleaved rounds of BenchmarkRedis, base (0d75a70: main at 9e70b57
# with the redisstore test conversion) and new (h-redis at 76cfdbe: WithFallback,
# Health, fallback removed) alternating, the order swapped each round, 300 ms
# each (benchmarks module test binaries built with go test -c). Result: every
# time row n.s. but floodgate-gcra/seq (-6.5 %); allocations unchanged (0 per
# deny-cache decision). The machine was shared with two other helpers'
# benchmarks (rows vary by 10-60 % within one binary); an earlier run, with
# the fallback in a wrapper frame around every decision, measured
# floodgate-denied/seq +30 %, which the final code removed.
# Before each run it waits (up to 30 s) for a second in which the machine
# was at least 85 % idle; the log says what it found.
cd /tmp/redis/bench
BT=${BT:-300ms}
: > redis.txt.base; : > redis.txt.new; : > run.log
idle() {
  read -r _ u1 n1 s1 i1 w1 x1 y1 z1 _ < /proc/stat
  sleep 1
  read -r _ u2 n2 s2 i2 w2 x2 y2 z2 _ < /proc/stat
  local busy=$(( (u2+n2+s2+x2+y2+z2) - (u1+n1+s1+x1+y1+z1) )) id=$(( (i2+w2) - (i1+w1) ))
  echo $(( 100 * id / (busy + id) ))
}
for r in 1 2 3 4 5 6; do
  if [ $((r % 2)) -eq 1 ]; then order="base new"; else order="new base"; fi
  for v in $order; do
    for try in $(seq 30); do p=$(idle); (( p >= 85 )) && break; done
    echo "round $r $v idle=$p% tries=$try $(date +%T)" >> run.log
    ../bench-$v.test -test.run '^$' -test.bench '^BenchmarkRedis$' -test.benchmem -test.benchtime=$BT >> redis.txt.$v 2>&1
  done
done
/root/go/bin/benchstat redis.txt.base redis.txt.new > benchstat.txt
echo finished $(date +%T) >> run.log
