#!/bin/bash
# The Redis rows before (914a3b7, this session's start) and after (main at
# the end of the session), interleaved: 6 rounds, one run of each binary a
# round. Binaries: go test -c in benchmarks/ at each commit.
# usage: 2026-11-26-session-redis-run.sh BASE.test NEW.test OUTPREFIX
base=$1; new=$2; out=$3
rows='^BenchmarkRedis$/^(ping|floodgate|floodgate-gcra|floodgate-stack2|redis_rate|ulule)$/^(seq|par64)$'
: > "$out-base.txt"; : > "$out.txt"
for i in 1 2 3 4 5 6; do
  "$base" -test.run '^$' -test.bench "$rows" -test.benchmem -test.count 1 -test.benchtime 2000x >> "$out-base.txt" 2>&1
  "$new" -test.run '^$' -test.bench "$rows" -test.benchmem -test.count 1 -test.benchtime 2000x >> "$out.txt" 2>&1
done
