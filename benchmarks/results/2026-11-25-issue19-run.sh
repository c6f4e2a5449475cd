#!/bin/bash
# Issue 19, request-path speed: 6 interleaved rounds of the base (fda29b0,
# main when h-speed branched) and the new (h-speed) code. Each round runs,
# for each of five test binaries, base and new back to back, the order
# swapped every round; before each run it waits (up to 30 s) for a second
# in which the shared 2-core machine was at least 70 % idle, and the log
# says what it found.
#
# Binaries, built beforehand into $dir (see the build step below):
#   bench-{base,new}     the benchmarks module (BenchmarkHTTP, BenchmarkGRPC);
#                        both from h-speed's benchmarks/ sources, against
#                        floodgate at fda29b0 (base) and at h-speed (new)
#   httpmw-, grpcmw-, fields-, pipeline-{base,new}: the packages' own benchmarks
#
# Build (base = a copy of fda29b0 with h-speed's benchmarks/ in it):
#   git archive fda29b0 | tar -x -C $base; cp -r benchmarks/* $base/benchmarks/
#   (cd $base/benchmarks && go test -c -o $dir/bench-base.test .)
#   (cd benchmarks && go test -c -o $dir/bench-new.test .)
#   for p in httpmw grpcmw internal/fields internal/pipeline; do
#     (cd $base/$p && go test -c -o $dir/$(basename $p)-base.test .)
#     (cd $p && go test -c -o $dir/$(basename $p)-new.test .); done
dir=${DIR:-/tmp/speed/run}
out=${OUT:-$dir/issue19}
BT=${BT:-300ms}
cd $dir || exit 1
rm -f $out-*.txt $out.log
idle() { # percent idle over one second
  read -r _ u1 n1 s1 i1 w1 x1 y1 z1 _ < /proc/stat
  sleep 1
  read -r _ u2 n2 s2 i2 w2 x2 y2 z2 _ < /proc/stat
  local busy=$(( (u2+n2+s2+x2+y2+z2) - (u1+n1+s1+x1+y1+z1) )) id=$(( (i2+w2) - (i1+w1) ))
  echo $(( 100 * id / (busy + id) ))
}
runs="bench:HTTP|GRPC httpmw:. grpcmw:. fields:. pipeline:."
for i in 1 2 3 4 5 6; do
  for r in $runs; do
    bin=${r%%:*}; re=${r#*:}
    if (( i % 2 )); then order="base new"; else order="new base"; fi
    for v in $order; do
      for try in $(seq 30); do p=$(idle); (( p >= 70 )) && break; done
      echo "round $i $bin $v idle=$p% tries=$try $(date +%T)" >> $out.log
      ./$bin-$v.test -test.run '^$' -test.bench "$re" -test.benchmem -test.benchtime=$BT -test.count 1 >> $out-$bin-$v.txt 2>&1
    done
  done
done
for b in bench httpmw grpcmw fields pipeline; do
  /root/go/bin/benchstat $out-$b-base.txt $out-$b-new.txt > $out-$b-benchstat.txt 2>&1
done
