package redisstore

import (
	"slices"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
)

// TestShareTerms: a share of a limit among h holders is the rate and the
// burst (a fixed window's events) divided by h, never below one unit or
// one holder, and never an interval that overflows.
func TestShareTerms(t *testing.T) {
	gcra := core.PerSecond(100).WithAlgorithm(core.GCRA)
	for _, tc := range []struct {
		name string
		lim  core.Limit
		h    int64
		want shareTerms
	}{
		{"GCRA among 4", gcra, 4, shareTerms{holders: 4, interval: int64(40 * time.Millisecond), burst: 25}},
		{"no holders seen: alone", gcra, 0, shareTerms{holders: 1, interval: int64(10 * time.Millisecond), burst: 100}},
		{"token bucket among 3", core.PerSecond(100), 3, shareTerms{holders: 3, interval: int64(30 * time.Millisecond), burst: 33}},
		{"a burst smaller than the holders: one unit", gcra.WithBurst(2), 4, shareTerms{holders: 4, interval: int64(40 * time.Millisecond), burst: 1}},
		{"fixed window among 3", core.PerSecond(200).WithAlgorithm(core.FixedWindow), 3, shareTerms{fixed: true, holders: 3, burst: 66, period: int64(time.Second)}},
		{"fixed window, fewer events than holders", core.PerSecond(2).WithAlgorithm(core.FixedWindow), 4, shareTerms{fixed: true, holders: 4, burst: 1, period: int64(time.Second)}},
		{"an interval past the longest span", core.PerDay(1), 1 << 40, shareTerms{holders: 1 << 40, interval: int64(maxSpan), burst: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := termsOf(tc.lim, tc.h); got != tc.want {
				t.Errorf("termsOf(%v, %d) = %+v, want %+v", tc.lim, tc.h, got, tc.want)
			}
		})
	}
}

// TestShareDecisions walks a share from the grant it is warmed from:
// the shared state's Remaining at the grant divided among the holders,
// refilled since at the share's rate (a fixed window's within the grant's
// window only), then decisions, refusals and refunds, exactly.
func TestShareDecisions(t *testing.T) {
	t0 := coretest.T0.UnixNano()
	ms := func(n int64) int64 { return t0 + n*int64(time.Millisecond) }
	type step struct {
		at     int64 // ms after T0
		cost   int64
		refund bool
		want   core.Decision
	}
	for _, tc := range []struct {
		name             string
		lim              core.Limit
		h                int64
		sent, rem, reset int64
		steps            []step
	}{
		{
			// 40 left at the grant, 10 of them this share's (of 25); 200 ms
			// later 5 more have come back.
			name: "GCRA among 4", lim: core.PerSecond(100).WithAlgorithm(core.GCRA), h: 4, sent: ms(0), rem: 40,
			steps: []step{
				{at: 200, cost: 1, want: core.Decision{Allowed: true, Remaining: 14, ResetAfter: 440 * time.Millisecond}},
				{at: 200, cost: 15, want: core.Decision{Remaining: 14, RetryAfter: 40 * time.Millisecond, ResetAfter: 440 * time.Millisecond}},
				{at: 200, cost: 4, refund: true},
				{at: 200, cost: 15, want: core.Decision{Allowed: true, Remaining: 3, ResetAfter: 880 * time.Millisecond}},
				{at: 200, cost: 4, want: core.Decision{Remaining: 3, RetryAfter: 40 * time.Millisecond, ResetAfter: 880 * time.Millisecond}},
				// A refund never lifts the share above whole.
				{at: 1200, cost: 25, refund: true},
				{at: 1200, cost: 25, want: core.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
			},
		},
		{
			// The shared state was empty: the share starts empty at the
			// grant, and a unit comes back every 40 ms.
			name: "GCRA among 4, nothing left", lim: core.PerSecond(100).WithAlgorithm(core.GCRA), h: 4, sent: ms(0), rem: 0,
			steps: []step{
				{at: 1, cost: 1, want: core.Decision{Remaining: 0, RetryAfter: 39 * time.Millisecond, ResetAfter: 999 * time.Millisecond}},
				{at: 40, cost: 1, want: core.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
			},
		},
		{
			name: "never granted: whole", lim: core.PerSecond(100).WithAlgorithm(core.GCRA), h: 4,
			steps: []step{
				{at: 0, cost: 25, want: core.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
				{at: 0, cost: 1, want: core.Decision{Remaining: 0, RetryAfter: 40 * time.Millisecond, ResetAfter: time.Second}},
			},
		},
		{
			// 40 left in the grant's window, which ends 700 ms after it: 10
			// of them this share's (of 25); the next window is whole.
			name: "fixed window among 4", lim: core.PerSecond(100).WithAlgorithm(core.FixedWindow), h: 4, sent: ms(300), rem: 40, reset: int64(700 * time.Millisecond),
			steps: []step{
				{at: 500, cost: 10, want: core.Decision{Allowed: true, Remaining: 0, ResetAfter: 500 * time.Millisecond}},
				{at: 500, cost: 1, want: core.Decision{Remaining: 0, RetryAfter: 500 * time.Millisecond, ResetAfter: 500 * time.Millisecond}},
				{at: 600, cost: 2, refund: true},
				{at: 600, cost: 3, want: core.Decision{Remaining: 2, RetryAfter: 400 * time.Millisecond, ResetAfter: 400 * time.Millisecond}},
				{at: 600, cost: 2, want: core.Decision{Allowed: true, Remaining: 0, ResetAfter: 400 * time.Millisecond}},
				{at: 1000, cost: 1, want: core.Decision{Allowed: true, Remaining: 24, ResetAfter: time.Second}},
				// A refund never lifts the window above its events.
				{at: 1500, cost: 5, refund: true},
				{at: 1500, cost: 25, want: core.Decision{Allowed: true, Remaining: 0, ResetAfter: 500 * time.Millisecond}},
			},
		},
		{
			name: "an overflowing interval", lim: core.PerDay(1), h: 1 << 40,
			steps: []step{
				{at: 0, cost: 1, want: core.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Duration(maxSpan)}},
				{at: 0, cost: 1, want: core.Decision{Remaining: 0, RetryAfter: time.Duration(maxSpan), ResetAfter: time.Duration(maxSpan)}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := termsOf(tc.lim, tc.h).warm(tc.sent, tc.rem, tc.reset)
			for i, st := range tc.steps {
				now := ms(st.at)
				if st.refund {
					s.refund(now, st.cost)
					continue
				}
				if got := s.allow(now, st.cost); got != st.want {
					t.Errorf("step %d (%d at %d ms): %+v, want %+v", i, st.cost, st.at, got, st.want)
				}
			}
		})
	}
}

// TestSharePrune: a shard at its bound drops the shares whole again (a
// stack's key: every layer), or, when none is, the one closest to whole,
// which loses least by starting afresh.
func TestSharePrune(t *testing.T) {
	g := termsOf(core.PerSecond(100).WithAlgorithm(core.GCRA), 4)
	f := termsOf(core.PerSecond(100).WithAlgorithm(core.FixedWindow), 4)
	const now = 1000
	one := func(s share) *shared { return &shared{layers: []share{s}} }
	for _, tc := range []struct {
		name string
		m    map[string]*shared
		want []string // the keys left
	}{
		{"whole ones go", map[string]*shared{
			"spent": one(share{terms: g, tat: now + 5}), "whole": one(share{terms: g, tat: now}),
			"window over": one(share{terms: f, end: now, count: 3}), "window unused": one(share{terms: f, end: now + 9}),
			"window in use":          one(share{terms: f, end: now + 9, count: 1}),
			"stack, one layer spent": {layers: []share{{terms: g, tat: now}, {terms: f, end: now + 9, count: 1}}},
			"stack, whole":           {layers: []share{{terms: g, tat: now}, {terms: f, end: now + 9}}},
		}, []string{"spent", "stack, one layer spent", "window in use"}},
		{"else the closest to whole", map[string]*shared{
			"far": one(share{terms: g, tat: now + 50}), "close": one(share{terms: g, tat: now + 5}),
			"window": one(share{terms: f, end: now + 20, count: 1}),
		}, []string{"far", "window"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sh := shareShard{m: tc.m}
			sh.prune(now)
			var left []string
			for k := range sh.m {
				left = append(left, k)
			}
			slices.Sort(left)
			if !slices.Equal(left, tc.want) {
				t.Errorf("left %q, want %q", left, tc.want)
			}
		})
	}
}

// TestShareStack: a stack's shares decide all or nothing and name the
// layer a core.Stack names: admitted, the one with the least left (the
// first of equals); refused, the refusing one that waits longest, with the
// least any refusing layer has left. A refusal charges no layer.
func TestShareStack(t *testing.T) {
	t0 := coretest.T0.UnixNano() // a multiple of 10 s: windows start there
	ms := func(n int64) int64 { return t0 + n*int64(time.Millisecond) }
	rate := core.PerSecond(100).WithAlgorithm(core.GCRA)
	window := core.Limit{Events: 200, Period: 10 * time.Second, Algorithm: core.FixedWindow}
	limits := []core.Limit{rate, window}
	// Among 2 holders: 50 at once, one every 20 ms; 100 a window.
	ss := []share{{terms: termsOf(rate, 2)}, {terms: termsOf(window, 2)}}
	for i, st := range []struct {
		at, cost int64
		want     core.Decision
	}{
		{0, 30, core.Decision{Allowed: true, Limit: rate, Remaining: 20, ResetAfter: 600 * time.Millisecond}},
		// The rate refuses, the window would admit.
		{0, 25, core.Decision{Limit: rate, Remaining: 20, RetryAfter: 100 * time.Millisecond, ResetAfter: 600 * time.Millisecond}},
		{600, 20, core.Decision{Allowed: true, Limit: rate, Remaining: 30, ResetAfter: 400 * time.Millisecond}},
		{2000, 50, core.Decision{Allowed: true, Limit: rate, Remaining: 0, ResetAfter: time.Second}},
		// The window refuses, the rate would admit, and is not charged.
		{3000, 1, core.Decision{Limit: window, Remaining: 0, RetryAfter: 7 * time.Second, ResetAfter: 7 * time.Second}},
		{10000, 1, core.Decision{Allowed: true, Limit: rate, Remaining: 49, ResetAfter: 20 * time.Millisecond}},
	} {
		if got := allowAll(ss, limits, ms(st.at), st.cost); got != st.want {
			t.Errorf("step %d (%d at %d ms): %+v, want %+v", i, st.cost, st.at, got, st.want)
		}
		if i == 4 && ss[0].tat != ms(3000) {
			t.Errorf("the refusal charged the rate's share: whole at %d ms, want 3000", (ss[0].tat-t0)/1e6)
		}
	}
}
