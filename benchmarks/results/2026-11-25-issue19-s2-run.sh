#!/bin/bash
# Issue 19 second session before/after: base e245916 (the start) and new
# (main at 2026-11-25 22:30, after the context and shared-values change), 6 rounds, the two versions alternating (order
# swapped each round), each benchmark binary run back to back.
cd /tmp/fb2
BT=${BT:-150ms}
for f in core httpmw grpcmw bench; do : > $f.base; : > $f.new; done
for r in 1 2 3 4 5 6; do
  if [ $((r % 2)) -eq 1 ]; then order="base new"; else order="new base"; fi
  for v in $order; do
    ./core-$v.test -test.run '^$' -test.bench 'AlgorithmAdmit|HotSeq|HotPar|ZipfPar|Stack' -test.benchmem -test.benchtime=$BT >> core.$v 2>&1
    ./httpmw-$v.test -test.run '^$' -test.bench . -test.benchmem -test.benchtime=$BT >> httpmw.$v 2>&1
    ./grpcmw-$v.test -test.run '^$' -test.bench . -test.benchmem -test.benchtime=$BT >> grpcmw.$v 2>&1
    ./bench-$v.test -test.run '^$' -test.bench 'Decision/.*/(hot_seq|hot_par|zipf_par)$|HTTP|GRPC|Redis' -test.benchmem -test.benchtime=$BT >> bench.$v 2>&1
  done
  echo round $r done $(date)
done
for f in core httpmw grpcmw bench; do /root/go/bin/benchstat $f.base $f.new > $f.benchstat 2>&1; done
echo all done $(date)
