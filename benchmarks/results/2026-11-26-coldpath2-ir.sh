#!/bin/bash
# Instructions a redis-server runs per call, counted by valgrind's callgrind (whole process,
# collection on for the timed block only): 2026-11-26-coldpath2-ir.sh LIBRARY "COMMAND {K}" N.
# LIBRARY: a Functions library to FUNCTION LOAD first ("" for none); {K} becomes k0, k1, ...
# (4,096 keys); 200 untimed calls first. RR_LUA: a script file to SCRIPT LOAD as well
# (redis_rate's, for its EVALSHA row). Needs a redis-server on PATH and port 7802 free.
lib=$1; cmd=$2; n=$3; port=7802
rm -f ${TMPDIR:-/tmp}/cg.out*
valgrind --tool=callgrind --callgrind-out-file=${TMPDIR:-/tmp}/cg.out --instr-atstart=no redis-server --port $port --save '' --appendonly no >${TMPDIR:-/tmp}/vg.log 2>&1 &
vp=$!
for i in $(seq 50); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.2; done
[ -n "$lib" ] && redis-cli -p $port -x FUNCTION LOAD REPLACE < $lib >/dev/null
[ -n "$RR_LUA" ] && redis-cli -p $port -x SCRIPT LOAD < "$RR_LUA" >/dev/null
gen() { for i in $(seq 0 $(($1-1))); do k="k$((i % 4096))"; echo "${cmd//\{K\}/$k}"; done; }
gen 200 | redis-cli -p $port >/dev/null
callgrind_control -i on $vp >/dev/null
gen $n | redis-cli -p $port >/dev/null
callgrind_control -d $vp >/dev/null
callgrind_control -i off $vp >/dev/null
kill $vp; wait $vp 2>/dev/null
f=$(ls ${TMPDIR:-/tmp}/cg.out.* | tail -1)
tot=$(callgrind_annotate $f 2>/dev/null | grep "PROGRAM TOTALS" | head -1 | awk '{gsub(",","",$1); print $1}')
echo "$tot $n" | awk '{printf "%.0f Ir/call\n", $1/$2}'
