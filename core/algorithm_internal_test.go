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
			a, err := newAlgo(PerSecond(100).WithAlgorithm(alg))
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

// BenchmarkLogAdmit is BenchmarkAlgorithmAdmit for the algorithms whose
// state is a log (SlidingLog, SlidingWindow with 10 sub-windows), at 100
// per second: in steady state each admission drops the entry that left the
// window and adds one, and allocates nothing.
func BenchmarkLogAdmit(b *testing.B) {
	for _, sub := range []int{0, 10} {
		name := "sliding-log"
		l := PerSecond(100).WithAlgorithm(SlidingLog)
		if sub > 0 {
			name, l = "sub-windows-10", l.WithSubWindows(sub)
		}
		b.Run(name, func(b *testing.B) {
			w, err := newWindowLog(l)
			if err != nil {
				b.Fatal(err)
			}
			now := int64(1_700_000_000) * int64(time.Second)
			x := &xlog{}
			denied := 0
			b.ReportAllocs()
			for b.Loop() {
				now += 20 * int64(time.Millisecond)
				v := w.decide(x, now, 1)
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
