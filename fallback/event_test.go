package fallback_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/fallback"
)

func TestObserverEvents(t *testing.T) {
	t.Parallel()
	// Two calls at least, 60 % failed: a success and a failure (50 %) keep
	// it closed, a second failure (67 %) opens it.
	r := newRig(t, fallback.WithBreaker(fallback.BreakerConfig{MinCalls: 2, FailureRate: 60}))
	r.allow(t, t.Context())
	r.primary.set(storeDown)
	r.allow(t, t.Context())
	r.allow(t, t.Context())
	r.allow(t, t.Context())
	r.clock.Advance(time.Second)
	r.primary.set(nil)
	r.allow(t, t.Context())

	var got []string
	for _, e := range r.rec.events {
		switch e.Kind {
		case fallback.EventDecided:
			got = append(got, e.Side.String())
		case fallback.EventPrimaryFailed:
			if !errors.Is(e.Err, core.ErrStore) || !errors.Is(e.Err, errDown) {
				t.Errorf("failure event carries %v, want the store error", e.Err)
			}
			got = append(got, "failed")
		case fallback.EventStateChanged:
			got = append(got, e.From.String()+">"+e.To.String())
		}
	}
	want := []string{
		"primary",
		"failed", "local",
		"failed", "closed>open", "local",
		"local",
		"open>half-open", "half-open>closed", "primary",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events\n got %v\nwant %v", got, want)
	}
	wantStats := fallback.Stats{PrimaryDecisions: 2, LocalDecisions: 3, PrimaryFailures: 2, Opens: 1}
	if st := r.Stats(); st != wantStats {
		t.Errorf("Stats = %+v, want %+v", st, wantStats)
	}
}

func TestStrings(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		s    fmt.Stringer
		want string
	}{
		{fallback.Closed, "closed"},
		{fallback.Open, "open"},
		{fallback.HalfOpen, "half-open"},
		{fallback.State(9), "State(9)"},
		{fallback.Primary, "primary"},
		{fallback.Local, "local"},
		{fallback.Side(9), "Side(9)"},
		{fallback.EventDecided, "decided"},
		{fallback.EventPrimaryFailed, "primary-failed"},
		{fallback.EventStateChanged, "state-changed"},
		{fallback.EventKind(9), "EventKind(9)"},
	} {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

// TestConcurrentFlapping runs Allow and Refund from many goroutines while
// the primary goes down and up and the clock moves, for the race detector,
// and checks that every decision was counted once, on one side.
func TestConcurrentFlapping(t *testing.T) {
	t.Parallel()
	// Buckets of 3 ms, the clock's step: three steps of store errors
	// (24 calls at least) open the breaker.
	r := newRig(t, fallback.WithTimeout(time.Millisecond),
		fallback.WithBreaker(fallback.BreakerConfig{Window: 30 * time.Millisecond, MinCalls: 10, OpenFor: 10 * time.Millisecond}))
	var calls atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			for !stop.Load() {
				if _, err := r.Allow(context.Background(), "k", 1); err != nil {
					t.Errorf("Allow: %v", err)
				}
				if err := r.Refund(context.Background(), "k", 1); err != nil {
					t.Errorf("Refund: %v", err)
				}
				calls.Add(1)
			}
		})
	}
	for i := 0; i < 64; i++ {
		switch i % 8 {
		case 0, 1, 2:
			r.primary.set(storeDown)
		case 4:
			r.primary.set(hang) // cut after 1 ms of real time
		default:
			r.primary.set(nil)
		}
		r.clock.Advance(3 * time.Millisecond)
		_, _ = r.State(), r.Stats()
		for seen := calls.Load(); calls.Load() < seen+8; {
			runtime.Gosched()
		}
	}
	stop.Store(true)
	wg.Wait()
	total := uint64(calls.Load())
	st := r.Stats()
	if st.PrimaryDecisions+st.LocalDecisions != total {
		t.Errorf("Stats = %+v: %d decisions counted, want %d", st, st.PrimaryDecisions+st.LocalDecisions, total)
	}
	if l := uint64(r.local.allows.Load()); l != st.LocalDecisions {
		t.Errorf("local Allow calls %d, LocalDecisions %d", l, st.LocalDecisions)
	}
	if p := uint64(r.primary.allows.Load()); p < st.PrimaryDecisions {
		t.Errorf("primary Allow calls %d, PrimaryDecisions %d", p, st.PrimaryDecisions)
	}
	if st.PrimaryFailures == 0 || st.Opens == 0 {
		t.Errorf("Stats = %+v: the flapping primary never failed or opened the breaker", st)
	}
}
