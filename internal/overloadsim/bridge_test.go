package overloadsim

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/overload"
)

// staticCore is floodgate's static concurrency limit of n, one key for
// every request, through the bridge.
func staticCore(n int) Factory {
	return Bridge{
		New: func(clock core.Clock, _ *Env) (core.Limiter, error) {
			return core.New(core.Limit{Events: n, Period: time.Second, Algorithm: core.Concurrency}, core.WithClock(clock))
		},
		Key: func(*Request) string { return "" },
	}.Factory()
}

// TestBridgeStatic: core's static concurrency limit of the workers, driven
// through the bridge, decides every request as the static anchor does.
func TestBridgeStatic(t *testing.T) {
	c := small(5, 3*time.Second, Step{0, 0.8}, Step{time.Second, 3})
	c.Classes = []Class{{overload.Critical, 1}, {overload.Normal, 4}}
	c.Tenants = []float64{1, 1, 2}
	want, err := Run(c, NewStatic)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Run(c, staticCore(c.Workers))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Bins, want.Bins) {
		t.Error("core's static limit through the bridge and the static anchor decided differently")
	}
	if s := got.Refused(time.Second, 3*time.Second); s < 0.5 {
		t.Errorf("refused %.3f at 3x: the limit did not bind", s)
	}
}

// recorder is a core.Limiter that admits everything and records what the
// bridge told it.
type recorder struct {
	clock   core.Clock
	allowed []time.Time
	keys    []string
	prios   []overload.Priority
	ended   []time.Time
	endings []core.Ending
}

func (r *recorder) Allow(ctx context.Context, key string, cost int) (core.Decision, error) {
	r.allowed = append(r.allowed, time.Unix(0, r.clock.Now()))
	r.keys = append(r.keys, key)
	r.prios = append(r.prios, overload.PriorityOf(ctx))
	return core.Decision{Allowed: true, Lease: core.NewLease(func(_ context.Context, e core.Ending) error {
		r.ended = append(r.ended, time.Unix(0, r.clock.Now()))
		r.endings = append(r.endings, e)
		return nil
	})}, nil
}

func (r *recorder) Refund(context.Context, string, int) error { return nil }

// TestBridgeLeases: each request is asked for at its arrival on the fake
// clock, under its tenant and with its priority, and its lease is ended
// at its completion: EndDone in time, EndDropped past the deadline.
func TestBridgeLeases(t *testing.T) {
	rec := &recorder{}
	f := Bridge{New: func(clock core.Clock, _ *Env) (core.Limiter, error) { rec.clock = clock; return rec, nil }}.Factory()
	// One worker, 10 ms each, SLO 15 ms: the second waits 9 ms (latency
	// 19 ms, dropped), the third arrives to an idle server.
	c := Config{Workers: 1, MeanService: 10 * time.Millisecond, Sigma: -1, SLOFactor: 1.5, Duration: time.Second,
		Arrivals: []time.Duration{time.Millisecond, 2 * time.Millisecond, 40 * time.Millisecond},
		Classes:  []Class{{overload.Critical, 1}}, Tenants: []float64{1}}
	if _, err := Run(c, f); err != nil {
		t.Fatal(err)
	}
	at := func(ms ...int) (ts []time.Time) {
		for _, m := range ms {
			ts = append(ts, bridgeEpoch.Add(time.Duration(m)*time.Millisecond))
		}
		return ts
	}
	if !reflect.DeepEqual(rec.allowed, at(1, 2, 40)) || !reflect.DeepEqual(rec.ended, at(11, 21, 50)) {
		t.Errorf("asked at %v, ended at %v; want 1, 2, 40 and 11, 21, 50 ms after the epoch", rec.allowed, rec.ended)
	}
	if want := []core.Ending{core.EndDone, core.EndDropped, core.EndDone}; !reflect.DeepEqual(rec.endings, want) {
		t.Errorf("endings %v, want %v", rec.endings, want)
	}
	if rec.keys[0] != "t0" || rec.prios[0] != overload.Critical {
		t.Errorf("asked under %q with priority %d, want t0 and Critical", rec.keys[0], rec.prios[0])
	}
}

// TestBridgeError: a limiter that fails ends the run with its error.
func TestBridgeError(t *testing.T) {
	boom := errors.New("boom")
	f := Bridge{New: func(core.Clock, *Env) (core.Limiter, error) { return coretest.StoreDown(boom), nil }}.Factory()
	if _, err := Run(small(1, time.Second, Step{0, 1}), f); !errors.Is(err, boom) {
		t.Errorf("Run = %v, want the limiter's error", err)
	}
	if _, err := Run(small(1, time.Second, Step{0, 1}), Bridge{}.Factory()); err == nil {
		t.Error("Run with no Bridge.New: no error")
	}
}
