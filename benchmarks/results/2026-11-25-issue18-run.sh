#!/bin/bash
# 6 interleaved rounds, old and new alternating (order swapped each round)
cd /tmp/bb
BT=${BT:-300ms}
: > core.txt.base; : > core.txt.new; : > http.txt.base; : > http.txt.new; : > peers.txt.base; : > peers.txt.new; : > redis.txt.base; : > redis.txt.new
for r in 1 2 3 4 5 6; do
  if [ $((r % 2)) -eq 1 ]; then order="base new"; else order="new base"; fi
  for v in $order; do
    ./core-$v.test -test.run '^$' -test.bench 'AlgorithmAdmit|HotSeq|HotPar|ZipfPar|Stack' -test.benchmem -test.benchtime=$BT >> core.txt.$v 2>&1
    ./httpmw-$v.test -test.run '^$' -test.bench . -test.benchmem -test.benchtime=$BT >> http.txt.$v 2>&1
    ./bench-$v.test -test.run '^$' -test.bench 'Decision/.*/(hot_seq|hot_par|zipf_par)$|HTTP' -test.benchmem -test.benchtime=$BT >> peers.txt.$v 2>&1
    ./bench-$v.test -test.run '^$' -test.bench 'Redis' -test.benchmem -test.benchtime=$BT >> redis.txt.$v 2>&1
  done
  echo round $r done $(date)
done
