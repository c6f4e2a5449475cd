package core

import (
	"testing"
	"time"
)

var sinkVerdict verdict

// BenchmarkAlgorithmAdmit measures each algorithm's arithmetic alone for an
// admitted cost-1 request (state in, new state and verdict out), with no
// table, lock or clock: what the locked path adds per admission on top of
// the store. The clock moves 20 ms a call, so every call is admitted.
func BenchmarkAlgorithmAdmit(b *testing.B) {
	for _, alg := range []Algorithm{TokenBucket, GCRA, FixedWindow, SlidingWindow} {
		b.Run(alg.String(), func(b *testing.B) {
			a, err := newAlgo(alg, PerSecond(100), &options{})
			if err != nil {
				b.Fatal(err)
			}
			now := int64(1_700_000_000) * int64(time.Second)
			s := a.fresh(now)
			denied := 0
			for b.Loop() {
				now += 20 * int64(time.Millisecond)
				var v verdict
				s, v = a.decide(s, now, 1)
				if !v.allowed {
					denied++
				}
				sinkVerdict = v
			}
			if denied > 0 {
				b.Fatalf("%d calls denied; the benchmark measures admissions", denied)
			}
		})
	}
}
