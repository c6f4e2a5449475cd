package retry_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/option"
	"github.com/floodgate/floodgate/internal/retry"
)

func fixed(f float64) func() float64 { return func() float64 { return f } }

func TestWait(t *testing.T) {
	t.Parallel()
	p := retry.Defaults()
	p.Base, p.Cap, p.MaxWait = 100*time.Millisecond, time.Second, time.Minute
	tests := []struct {
		name   string
		rand   float64
		n      int
		hint   time.Duration
		dl     time.Duration // 0: no deadline
		want   time.Duration
		wantOK bool
	}{
		{"first retry, half jitter", 0.5, 1, 0, 0, 50 * time.Millisecond, true},
		{"doubles", 0.5, 3, 0, 0, 200 * time.Millisecond, true},
		{"capped", 0.5, 10, 0, 0, 500 * time.Millisecond, true},
		{"huge n capped", 0.5, 1000, 0, 0, 500 * time.Millisecond, true},
		{"hint plus jitter", 0.5, 1, 2 * time.Second, 0, 2*time.Second + 50*time.Millisecond, true},
		{"hint equal to max wait", 0, 1, time.Minute, 0, time.Minute, true},
		{"hint over max wait", 0, 1, time.Minute + 1, 0, 0, false},
		{"hint reaches deadline", 0, 1, 10 * time.Second, 5 * time.Second, 0, false},
		{"rand at 1 stays in bound", 1, 1, 0, 0, 100 * time.Millisecond, true},
		{"rand above 1 clamped", 7, 1, 0, 0, 100 * time.Millisecond, true},
		{"negative rand is no jitter", -1, 1, 0, 0, 0, true},
		{"NaN rand is no jitter", math.NaN(), 1, 0, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := p
			p.Rand = fixed(tt.rand)
			ctx := context.Background()
			if tt.dl > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.dl)
				defer cancel()
			}
			got, ok := p.Wait(ctx, tt.n, tt.hint, 0)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Wait(n=%d, hint=%v) = %v, %v; want %v, %v", tt.n, tt.hint, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestWaitJitterStopsAtDeadline(t *testing.T) {
	t.Parallel()
	p := retry.Defaults()
	p.Rand = fixed(1)
	p.Base, p.Cap = time.Hour, time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, ok := p.Wait(ctx, 1, time.Second, 0)
	if !ok || got > 10*time.Second || got < time.Second {
		t.Errorf("Wait = %v, %v; want between 1s and the 10s deadline", got, ok)
	}
}

// TestWaitTotal: the waits of one request's retries never add up past
// Total: a hint that would is refused, and the jitter is cut to what is
// left.
func TestWaitTotal(t *testing.T) {
	t.Parallel()
	p := retry.Defaults()
	p.Rand = fixed(1)
	p.Total = 90 * time.Second
	ctx := context.Background()
	for _, tt := range []struct {
		hint, spent, want time.Duration
		ok                bool
	}{
		{time.Minute, 0, time.Minute + 100*time.Millisecond, true},
		{time.Minute, 29 * time.Second, time.Minute + 100*time.Millisecond, true},
		{time.Minute, 29*time.Second + 950*time.Millisecond, 90*time.Second - 29*time.Second - 950*time.Millisecond, true},
		{time.Minute, 30 * time.Second, time.Minute, true},
		{time.Minute, 30*time.Second + 1, 0, false},
		{0, 90 * time.Second, 0, true},
		{1, 90 * time.Second, 0, false},
	} {
		got, ok := p.Wait(ctx, 1, tt.hint, tt.spent)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Wait(hint %v, spent %v) = %v, %v; want %v, %v", tt.hint, tt.spent, got, ok, tt.want, tt.ok)
		}
	}
}

func TestAddSat(t *testing.T) {
	t.Parallel()
	if got := retry.AddSat(retry.MaxDuration-1, 2); got != retry.MaxDuration {
		t.Errorf("AddSat near max = %v, want MaxDuration", got)
	}
	if got := retry.AddSat(3, 4); got != 7 {
		t.Errorf("AddSat(3, 4) = %v", got)
	}
}

func TestSettersValidate(t *testing.T) {
	t.Parallel()
	p := retry.Defaults()
	errs := option.Errors{Prefix: "x: "}
	p.SetMaxAttempts(&errs, 0)
	p.SetBackoff(&errs, 2, 1)
	p.SetMaxWait(&errs, 0, time.Hour)
	p.SetRand(&errs, nil)
	p.SetSleep(&errs, nil)
	p.SetMaxWait(&errs, time.Hour, -1)
	err := errs.Err()
	for _, want := range []string{"x: WithMaxAttempts(0)", "x: WithBackoff(2ns, 1ns)", "x: WithMaxWait(0s, 1h0m0s): want each > 0 (the default is 1m0s)", "x: WithRand(nil)", "x: WithSleep(nil)", "x: WithMaxWait(1h0m0s, -1ns): want total > 0 (the default is 3m0s)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("errors %v lack %q", err, want)
		}
	}
	if p.Rand == nil || p.Sleep == nil || p.Base != retry.DefaultBackoffBase || p.Attempts != retry.DefaultMaxAttempts || p.MaxWait != retry.DefaultMaxWait || p.Total != retry.DefaultMaxTotalWait {
		t.Errorf("invalid options changed the policy: %+v", p)
	}
	// Both bounds are set together, each to its own argument.
	var ok option.Errors
	p.SetMaxWait(&ok, 2*time.Second, 5*time.Second)
	if ok.Err() != nil || p.MaxWait != 2*time.Second || p.Total != 5*time.Second {
		t.Errorf("SetMaxWait(2s, 5s): %v, MaxWait %v, Total %v", ok.Err(), p.MaxWait, p.Total)
	}
}
