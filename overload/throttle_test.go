package overload_test

import (
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/overload"
)

var t0 = time.Unix(1_700_000_000, 0)

// never is a Rand under which Allow rejects nothing (every probability is
// below 1); always one under which it rejects whenever the probability is
// above 0.
func never() float64  { return math.Nextafter(1, 0) }
func always() float64 { return 0 }

// newThrottle makes a Throttle on a fake clock at t0.
func newThrottle(t *testing.T, c overload.ThrottleConfig) (*overload.Throttle, *coretest.Clock) {
	t.Helper()
	clock := coretest.NewClock(t0)
	c.Clock = clock
	th, err := overload.NewThrottle(c)
	if err != nil {
		t.Fatal(err)
	}
	return th, clock
}

// send sends n requests through th and ends each with e.
func send(t *testing.T, th *overload.Throttle, n int, e core.Ending) {
	t.Helper()
	for range n {
		tk, ok := th.Allow()
		if !ok {
			t.Fatal("Allow rejected a request the test meant to send")
		}
		tk.End(e, 0)
	}
}

func TestThrottleProbability(t *testing.T) {
	t.Parallel()
	tests := []struct {
		k                float64
		accepts, refused int
		want             float64
	}{
		{k: 0, accepts: 0, refused: 0, want: 0},
		{k: 0, accepts: 0, refused: 1, want: 1.0 / 2},
		{k: 0, accepts: 0, refused: 10, want: 10.0 / 11},
		{k: 0, accepts: 4, refused: 6, want: 2.0 / 11},
		{k: 0, accepts: 5, refused: 5, want: 0},
		{k: 0, accepts: 10, refused: 0, want: 0},
		{k: 0, accepts: 40, refused: 60, want: 20.0 / 101},
		{k: 1.5, accepts: 4, refused: 6, want: 4.0 / 11},
		{k: 1, accepts: 4, refused: 6, want: 6.0 / 11},
	}
	for _, tt := range tests {
		th, _ := newThrottle(t, overload.ThrottleConfig{K: tt.k, Rand: never})
		send(t, th, tt.accepts, core.EndDone)
		send(t, th, tt.refused, core.EndDropped)
		if got := th.Probability(); got != tt.want {
			t.Errorf("K=%v, %d accepted, %d refused: probability %v, want %v", tt.k, tt.accepts, tt.refused, got, tt.want)
		}
	}
}

// The window slides a tenth at a time: counts leave it a whole Window
// after the bucket they were made in.
func TestThrottleWindowSlides(t *testing.T) {
	t.Parallel()
	th, clock := newThrottle(t, overload.ThrottleConfig{Window: 5 * time.Second, Rand: never})
	send(t, th, 3, core.EndDropped)
	clock.Advance(2500 * time.Millisecond)
	send(t, th, 1, core.EndDone)
	steps := []struct {
		at   time.Duration // since t0
		want float64
	}{
		{2500 * time.Millisecond, 2.0 / 5}, // (4 − 2·1) / 5
		{4999 * time.Millisecond, 2.0 / 5},
		{5 * time.Second, 0}, // the 3 refusals are gone: (1 − 2) / 2
		{7499 * time.Millisecond, 0},
		{7500 * time.Millisecond, 0},
	}
	for _, s := range steps {
		clock.Set(t0.Add(s.at))
		if got := th.Probability(); got != s.want {
			t.Errorf("at %v: probability %v, want %v", s.at, got, s.want)
		}
	}
}

func TestThrottleCountsAtSend(t *testing.T) {
	t.Parallel()
	const bucket = time.Second // a tenth of the default window
	t.Run("unanswered", func(t *testing.T) {
		th, clock := newThrottle(t, overload.ThrottleConfig{Rand: always})
		tk, _ := th.Allow()
		for _, s := range []struct {
			after time.Duration
			want  float64
		}{{0, 0}, {bucket, 0}, {bucket, 1.0 / 2}, {5 * bucket, 1.0 / 2}} {
			clock.Advance(s.after)
			if got := th.Probability(); got != s.want {
				t.Fatalf("%v after sending, no answer: probability %v, want %v", clock.Time().Sub(t0), got, s.want)
			}
		}
		tk.End(core.EndDone, 0)
		if got := th.Probability(); got != 0 {
			t.Fatalf("answered: probability %v, want 0", got)
		}
	})
	t.Run("a burst just sent", func(t *testing.T) {
		th, clock := newThrottle(t, overload.ThrottleConfig{Rand: always})
		tks := make([]overload.ThrottleTicket, 100)
		for i := range tks {
			var ok bool
			if tks[i], ok = th.Allow(); !ok {
				t.Fatalf("request %d of a burst to a backend that refused nothing was rejected", i)
			}
		}
		clock.Advance(2 * bucket)
		if got, want := th.Probability(), 100.0/101; got != want {
			t.Fatalf("the burst unanswered two buckets on: probability %v, want %v", got, want)
		}
		for _, tk := range tks {
			tk.End(core.EndDone, 0)
		}
		if got := th.Probability(); got != 0 {
			t.Fatalf("the burst answered: probability %v, want 0", got)
		}
	})
	t.Run("local rejections not counted", func(t *testing.T) {
		th, _ := newThrottle(t, overload.ThrottleConfig{Rand: always})
		send(t, th, 1, core.EndDropped)
		for range 100 {
			if _, ok := th.Allow(); ok {
				t.Fatal("Rand 0 at probability 1/2 let a request through")
			}
		}
		if got := th.Probability(); got != 1.0/2 {
			t.Fatalf("after 100 local rejections: probability %v, want 1/2 (they are not counted)", got)
		}
	})
	t.Run("ignored", func(t *testing.T) {
		th, _ := newThrottle(t, overload.ThrottleConfig{Rand: never})
		send(t, th, 1, core.EndDropped)
		send(t, th, 3, core.EndIgnored)
		if got := th.Probability(); got != 1.0/2 {
			t.Fatalf("1 refused, 3 ignored: probability %v, want 1/2", got)
		}
	})
}

func TestThrottleRejection(t *testing.T) {
	t.Parallel()
	th, clock := newThrottle(t, overload.ThrottleConfig{Rand: always})
	tk, _ := th.Allow()
	tk.End(core.EndDropped, 3*time.Second)
	clock.Advance(time.Second)
	if _, ok := th.Allow(); ok {
		t.Fatal("Allow let a request through at probability 1/2 and Rand 0")
	}
	err := th.Rejection()
	if !errors.Is(err, overload.ErrThrottled) || err.RetryAfter != 2*time.Second || err.Probability != 0.5 {
		t.Fatalf("Rejection() = %+v, want ErrThrottled, RetryAfter 2s, Probability 0.5", err)
	}
	if !strings.Contains(err.Error(), "rejecting 50%") || !strings.Contains(err.Error(), "a wait of 2s") {
		t.Errorf("Rejection().Error() = %q", err.Error())
	}
	clock.Advance(3 * time.Second)
	if got := th.Rejection().RetryAfter; got != 0 {
		t.Errorf("after the backend's wait: RetryAfter %v, want 0", got)
	}
}

func TestNewThrottleErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []overload.ThrottleConfig{
		{Window: -time.Second},
		{Window: 9 * time.Millisecond},
		{K: 0.5},
		{K: -2},
		{K: math.NaN()},
		{K: math.Inf(1)},
	} {
		_, err := overload.NewThrottle(c)
		if err == nil || !strings.HasPrefix(err.Error(), "overload: ThrottleConfig.") {
			t.Errorf("NewThrottle(%+v) = %v, want an overload: ThrottleConfig error", c, err)
		}
	}
	if _, err := overload.NewThrottle(overload.ThrottleConfig{Window: 10 * time.Millisecond, K: 1}); err != nil {
		t.Errorf("the smallest valid config: %v", err)
	}
}

// Every count is made once, whatever the interleaving (run with -race).
func TestThrottleConcurrent(t *testing.T) {
	t.Parallel()
	th, _ := newThrottle(t, overload.ThrottleConfig{Rand: never})
	const workers, each = 8, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				tk, ok := th.Allow()
				if !ok {
					t.Error("rejected under Rand never")
					return
				}
				e := core.EndDropped
				if (w+i)%4 == 0 {
					e = core.EndDone
				}
				tk.End(e, 0)
				_ = th.Probability()
			}
		})
	}
	wg.Wait()
	// 4000 sent, 1000 accepted: (4000 − 2000) / 4001.
	if got, want := th.Probability(), 2000.0/4001; got != want {
		t.Fatalf("probability %v, want %v", got, want)
	}
}
