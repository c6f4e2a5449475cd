#!/bin/bash
# 2026-11-27-fwstate-cpu.sh DRIVER N MODE...: redis-server's CPU time (user + system, from
# /proc/PID/stat) per call for N sequential calls of each mode, on one native server, the modes
# interleaved as given (repeat a mode to interleave rounds).
drv=$1; n=$2; shift 2; port=7803
d=$(mktemp -d)
redis-server --port $port --save '' --appendonly no >$d/rs.log 2>&1 &
rp=$!
for i in $(seq 100); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.1; done
tck=$(getconf CLK_TCK)
for mode in "$@"; do
  rm -f $d/in; mkfifo $d/in
  $drv -addr 127.0.0.1:$port -mode $mode -n $n < $d/in > $d/out 2>&1 &
  dp=$!
  exec 3>$d/in
  until grep -q warm $d/out; do sleep 0.1; if ! kill -0 $dp 2>/dev/null; then cat $d/out; exit 1; fi; done
  a=$(awk '{print $14+$15}' /proc/$rp/stat)
  t0=$(date +%s.%N)
  echo go >&3
  wait $dp
  b=$(awk '{print $14+$15}' /proc/$rp/stat)
  t1=$(date +%s.%N)
  exec 3>&-
  echo "$mode $(echo "$a $b $tck $n $t0 $t1" | awk '{printf "%.1f µs redis CPU/call, %.1f µs wall/call", ($2-$1)/$3*1e6/$4, ($6-$5)*1e6/$4}')"
  redis-cli -p $port flushall >/dev/null
done
kill $rp; wait $rp 2>/dev/null
rm -rf $d
