package redisstore

import (
	"testing"
	"time"
)

// TestQuotaSize: a lease asks for the demand over one length and a quarter
// more, at least the call's cost, at most the burst's even share of half
// among the instances holding one.
func TestQuotaSize(t *testing.T) {
	const length = int64(time.Second)
	for _, tt := range []struct {
		seen        int64 // calls in the current length, which began at 0
		holders     int64
		cost, burst int
		want        int
	}{
		{seen: 8, holders: 1, cost: 1, burst: 1000, want: 10},
		{seen: 200, holders: 1, cost: 1, burst: 1000, want: 250},
		{seen: 200, holders: 4, cost: 1, burst: 1000, want: 125},   // the share of 4
		{seen: 200, holders: 0, cost: 1, burst: 1000, want: 250},   // no grant yet: 1 holder
		{seen: 1000, holders: 1, cost: 1, burst: 1000, want: 500},  // half the burst
		{seen: 1000, holders: 1000, cost: 1, burst: 1000, want: 1}, // at least 1
		{seen: 1, holders: 1, cost: 7, burst: 1000, want: 7},       // at least the cost
		{seen: 1, holders: 1, cost: 1, burst: 1, want: 1},
	} {
		q := &quota{seen: tt.seen, last: length / 2, holders: tt.holders}
		if got := q.size(length, tt.cost, tt.burst); got != tt.want {
			t.Errorf("%+v: size %d, want %d", tt, got, tt.want)
		}
	}
}
