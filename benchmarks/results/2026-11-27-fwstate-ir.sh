#!/bin/bash
# 2026-11-27-fwstate-ir.sh DRIVER MODE N: instructions redis-server runs per call (callgrind,
# collection on for the timed calls only), as benchmarks/results/2026-11-26-coldpath2-ir.sh.
drv=$1; mode=$2; n=$3; port=7802
d=$(mktemp -d)
valgrind --tool=callgrind --callgrind-out-file=$d/cg.out --instr-atstart=no redis-server --port $port --save '' --appendonly no >$d/vg.log 2>&1 &
vp=$!
for i in $(seq 100); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.2; done
mkfifo $d/in
$drv -addr 127.0.0.1:$port -mode $mode -n $n < $d/in > $d/out 2>&1 &
dp=$!
exec 3>$d/in
until grep -q warm $d/out; do sleep 0.2; if ! kill -0 $dp 2>/dev/null; then cat $d/out; exit 1; fi; done
callgrind_control -i on $vp >/dev/null
echo go >&3
wait $dp
callgrind_control -d $vp >/dev/null
callgrind_control -i off $vp >/dev/null
exec 3>&-
kill $vp; wait $vp 2>/dev/null
f=$(ls $d/cg.out.* | tail -1)
tot=$(callgrind_annotate $f 2>/dev/null | grep "PROGRAM TOTALS" | head -1 | awk '{gsub(",","",$1); print $1}')
echo "$mode $(basename $drv) $(echo "$tot $n" | awk '{printf "%.0f", $1/$2}') Ir/call"
rm -rf $d
