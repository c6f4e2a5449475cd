#!/bin/bash
# 6 interleaved rounds: per benchmark, the old and the new binary back to
# back, the order swapped every round, one -count each. Before each run it
# waits (up to 120 s) for a second in which the machine was at least 85 %
# idle, since other sessions share its 2 cores; the log says what it found.
cd /tmp/bench
out=${1:-final}
rm -f $out-old.txt $out-new.txt $out.log
idle() { # percent idle over one second
  read -r _ u1 n1 s1 i1 w1 x1 y1 z1 _ < /proc/stat
  sleep 1
  read -r _ u2 n2 s2 i2 w2 x2 y2 z2 _ < /proc/stat
  local busy=$(( (u2+n2+s2+x2+y2+z2) - (u1+n1+s1+x1+y1+z1) )) id=$(( (i2+w2) - (i1+w1) ))
  echo $(( 100 * id / (busy + id) ))
}
benches="pipeline:^BenchmarkObserveCost$ httpmw:^BenchmarkOverhead$ httpmw:^BenchmarkDenied$ httpmw:^BenchmarkWriteHeaders$ httpmw:^BenchmarkLayered$"
for i in 1 2 3 4 5 6; do
  for b in $benches; do
    pkg=${b%%:*}; re=${b#*:}
    if (( i % 2 )); then order="old new"; else order="new old"; fi
    for v in $order; do
      for try in $(seq 120); do p=$(idle); (( p >= 85 )) && break; done
      echo "round $i $re $v idle=$p% tries=$try" >> $out.log
      ./$v-$pkg.test -test.run '^$' -test.bench "$re" -test.benchmem -test.count 1 >> $out-$v.txt
    done
  done
done
~/go/bin/benchstat $out-old.txt $out-new.txt > $out-benchstat.txt
