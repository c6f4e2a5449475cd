#!/bin/bash
# ir.sh BINARY BENCHREGEX N : instructions per op = (Ir(3N)-Ir(N))/2N
bin=$1; re=$2; n=${3:-20000}
ir() {
  out=$(GOGC=off GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" -test.run '^$' -test.bench "$re" -test.benchtime=${1}x 2>&1 | grep -o 'Collected : [0-9]*' | grep -o '[0-9]*$')
  echo $out
}
a=$(ir $n); b=$(ir $((3*n)))
echo "$re $(( (b-a)/(2*n) ))"
