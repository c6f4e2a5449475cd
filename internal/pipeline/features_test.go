package pipeline_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/pipeline"
)

// ledger is a limiter that admits with d and records what it is asked.
type ledger struct {
	d core.Decision

	mu      sync.Mutex
	allows  []string
	refunds []string
}

func (l *ledger) Allow(_ context.Context, key string, cost int) (core.Decision, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.allows = append(l.allows, key)
	return l.d, nil
}

func (l *ledger) Refund(ctx context.Context, key string, cost int) error {
	if ctx.Err() != nil {
		return errors.New("refund under a cancelled context")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refunds = append(l.refunds, key+"/"+string(rune('0'+cost)))
	return nil
}

func simple(cfg pipeline.Config[req]) *pipeline.Pipeline[req] {
	cfg.Key = func(r req) (string, error) { return r.key, nil }
	cfg.Cost = func(r req) (int, error) { return r.cost, nil }
	return pipeline.New(cfg)
}

func TestHold(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var slept []time.Duration
	release := make(chan struct{})
	entered := make(chan struct{}, 4)
	p := simple(pipeline.Config[req]{Hold: pipeline.Hold{Max: 3 * time.Second, Concurrent: 1}})
	pipeline.SetSleep(p, func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		slept = append(slept, d)
		mu.Unlock()
		entered <- struct{}{}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	long := &ledger{d: core.Decision{Limit: core.PerSecond(1), RetryAfter: time.Minute}}
	short := &ledger{d: core.Decision{Limit: core.PerSecond(1), RetryAfter: time.Second}}

	// One denial is held; a second, while it is, is answered at once.
	var first pipeline.Result
	done := make(chan struct{})
	go func() { p.Run(context.Background(), req{key: "a", cost: 1}, long, 0, &first); close(done) }()
	<-entered
	var second pipeline.Result
	p.Run(context.Background(), req{key: "b", cost: 1}, long, 0, &second)
	if second.Held != 0 || second.Outcome != core.OutcomeDenied {
		t.Errorf("beyond the cap: held %v, outcome %v; want answered at once", second.Held, second.Outcome)
	}
	close(release)
	<-done
	if first.Held != 3*time.Second || first.Outcome != core.OutcomeDenied {
		t.Errorf("held %v (%v), want the bound 3s", first.Held, first.Outcome)
	}
	// RetryAfter shorter than the bound: held RetryAfter.
	var third pipeline.Result
	p.Run(context.Background(), req{key: "c", cost: 1}, short, 0, &third)
	if third.Held != time.Second {
		t.Errorf("held %v, want RetryAfter 1s", third.Held)
	}
	mu.Lock()
	if want := []time.Duration{3 * time.Second, time.Second}; len(slept) != 2 || slept[0] != want[0] || slept[1] != want[1] {
		t.Errorf("slept %v, want %v", slept, want)
	}
	mu.Unlock()
	// A request whose context ends is answered then, and held less.
	p2 := simple(pipeline.Config[req]{Hold: pipeline.Hold{Max: time.Hour, Concurrent: 1}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var fourth pipeline.Result
	p2.Run(ctx, req{key: "d", cost: 1}, long, 0, &fourth)
	if fourth.Outcome != core.OutcomeDenied || fourth.Held >= time.Second {
		t.Errorf("cancelled: %v held %v", fourth.Outcome, fourth.Held)
	}
}

func TestHoldProblem(t *testing.T) {
	t.Parallel()
	for _, h := range []pipeline.Hold{{Max: 0, Concurrent: 1}, {Max: -1, Concurrent: 1}, {Max: time.Second, Concurrent: 0}} {
		if h.Problem() == "" {
			t.Errorf("%+v accepted", h)
		}
	}
	if p := (pipeline.Hold{Max: time.Second, Concurrent: 1}).Problem(); p != "" {
		t.Errorf("valid hold refused: %s", p)
	}
}

// TestShapedCancelReleases checks that a shaped admission with a lease
// whose wait is cancelled releases the lease instead of refunding units.
func TestShapedCancelReleases(t *testing.T) {
	t.Parallel()
	var released int
	lease := core.NewLease(func(ctx context.Context, _ core.Ending) error {
		if ctx.Err() != nil {
			t.Error("released under a cancelled context")
		}
		released++
		return nil
	})
	lim := &ledger{d: core.Decision{Allowed: true, Delay: time.Hour, Lease: lease}}
	p := simple(pipeline.Config[req]{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var res pipeline.Result
	p.Run(ctx, req{key: "k", cost: 2}, lim, 0, &res)
	if res.Outcome != core.OutcomeCanceled || released != 1 || len(lim.refunds) != 0 {
		t.Errorf("outcome %v, released %d, refunds %v; want canceled, 1, none", res.Outcome, released, lim.refunds)
	}
}

// TestLayers checks that a refusal gives back every charge recorded in its
// context, each once, and that an admission or a skip gives back none.
func TestLayers(t *testing.T) {
	t.Parallel()
	outer := &ledger{d: core.Decision{Allowed: true}}
	middle := &ledger{d: core.Decision{Allowed: true}}
	denying := &ledger{d: core.Decision{RetryAfter: time.Second}}
	p := simple(pipeline.Config[req]{})
	ctx := context.Background()

	var r1, r2, r3 pipeline.Result
	p.Run(ctx, req{key: "o", cost: 2}, outer, 0, &r1)
	ctx = pipeline.Attach(ctx, outer, &r1)
	p.Run(ctx, req{key: "m", cost: 3}, middle, 0, &r2)
	ctx = pipeline.Attach(ctx, middle, &r2)
	p.Run(ctx, req{key: "skip", cost: 0}, denying, 0, &r3) // free: admitted
	if len(outer.refunds)+len(middle.refunds) != 0 {
		t.Fatalf("an admitted request refunded: %v %v", outer.refunds, middle.refunds)
	}
	p.Run(ctx, req{key: "i", cost: 1}, denying, 0, &r3)
	p.Run(ctx, req{key: "i", cost: 1}, denying, 0, &r3) // a second refusal refunds nothing more
	if len(outer.refunds) != 1 || outer.refunds[0] != "o/2" || len(middle.refunds) != 1 || middle.refunds[0] != "m/3" {
		t.Errorf("refunds %v %v, want [o/2] [m/3]", outer.refunds, middle.refunds)
	}
	if got := pipeline.Attach(context.Background(), outer, &r3); got != context.Background() {
		t.Error("a denial recorded a charge")
	}

	// A charge with a lease is given back by releasing it.
	var released int
	leased := &ledger{d: core.Decision{Allowed: true, Lease: core.NewLease(func(context.Context, core.Ending) error { released++; return nil })}}
	var r4 pipeline.Result
	p.Run(context.Background(), req{key: "l", cost: 1}, leased, 0, &r4)
	p.Run(pipeline.Attach(context.Background(), leased, &r4), req{key: "i", cost: 1}, denying, 0, &r3)
	if released != 1 || len(leased.refunds) != 0 {
		t.Errorf("released %d, refunds %v; want the lease released, no refund", released, leased.refunds)
	}
}

// TestSelect: the chosen limiter decides; a nil choice means the request
// is not limited, and its key function is never asked (a method without
// the key's metadata is not an error).
func TestSelect(t *testing.T) {
	t.Parallel()
	a, b := &ledger{d: core.Decision{Allowed: true}}, &ledger{d: core.Decision{Allowed: true}}
	keys := 0
	p := pipeline.New(pipeline.Config[req]{
		Key: func(r req) (string, error) { keys++; return r.key, nil },
		Select: func(r req) core.Limiter {
			if r.key == "b" {
				return b
			}
			return nil
		},
	})
	var res pipeline.Result
	p.Run(context.Background(), req{key: "a", cost: 1}, a, 0, &res)
	if !res.Skipped || !res.Admitted() || res.Limiter != nil || len(a.allows) != 0 || keys != 0 {
		t.Errorf("nil choice: skipped %v, limiter %v, a asked %d times, %d keys; want skipped, nothing asked", res.Skipped, res.Limiter, len(a.allows), keys)
	}
	p.Run(context.Background(), req{key: "b", cost: 1}, nil, 0, &res)
	if res.Skipped || res.Limiter != core.Limiter(b) || len(b.allows) != 1 || len(a.allows) != 0 {
		t.Errorf("choice b: limiter %v, asked a %d, b %d times", res.Limiter, len(a.allows), len(b.allows))
	}
}
