package fallback_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/fallback"
	"github.com/floodgate/floodgate/internal/coretest"
)

// t0 is where every test's clock starts: a whole second, so that open
// periods end exactly where the test expects.
var t0 = time.Unix(1_700_000_000, 0)

// fake is a core.Limiter that counts its calls and answers as its current
// behaviour says: an error, or (nil) the decision it was made with.
type fake struct {
	decision core.Decision
	behave   atomic.Pointer[behaviour]
	allows   atomic.Int64
	refunds  atomic.Int64
}

// behaviour is how a fake answers one call: a nil error lets it decide.
type behaviour func(ctx context.Context) error

func newFake(remaining int) *fake {
	return &fake{decision: core.Decision{Allowed: true, Remaining: remaining}}
}

func (f *fake) set(b behaviour) { f.behave.Store(&b) }

func (f *fake) answer(ctx context.Context) error {
	if b := f.behave.Load(); b != nil && *b != nil {
		return (*b)(ctx)
	}
	return nil
}

func (f *fake) Allow(ctx context.Context, _ string, _ int) (core.Decision, error) {
	f.allows.Add(1)
	if err := f.answer(ctx); err != nil {
		return core.Decision{}, err
	}
	return f.decision, nil
}

func (f *fake) Refund(ctx context.Context, _ string, _ int) error {
	f.refunds.Add(1)
	return f.answer(ctx)
}

var errDown = errors.New("dial tcp 10.0.0.7:6379: connection refused")

// storeDown fails every call with a store error.
func storeDown(context.Context) error { return &core.StoreError{Op: "allow", Err: errDown} }

// fails returns a behaviour that fails every call with err.
func fails(err error) behaviour { return func(context.Context) error { return err } }

// hang waits for the call's context to end and returns its error, as a
// client stuck on a dead connection does.
func hang(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

// recorder keeps the events an observer is told, for tests to compare.
type recorder struct {
	mu     sync.Mutex
	events []fallback.Event
}

func (r *recorder) observe(e fallback.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// transitions returns the state changes seen so far, as "from>to".
func (r *recorder) transitions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		if e.Kind == fallback.EventStateChanged {
			out = append(out, e.From.String()+">"+e.To.String())
		}
	}
	return out
}

// rig is a Limiter over two fakes with a frozen clock: primary answers
// with Remaining 1, local with Remaining 2, so that a decision tells which
// side made it.
type rig struct {
	*fallback.Limiter
	primary, local *fake
	clock          *coretest.Clock
	rec            *recorder
}

func newRig(t *testing.T, opts ...fallback.Option) *rig {
	t.Helper()
	r := &rig{primary: newFake(1), local: newFake(2), clock: coretest.NewClock(t0), rec: &recorder{}}
	opts = append([]fallback.Option{fallback.WithClock(r.clock), fallback.WithObserver(r.rec.observe)}, opts...)
	lim, err := fallback.New(r.primary, r.local, opts...)
	if err != nil {
		t.Fatal(err)
	}
	r.Limiter = lim
	return r
}

// allow calls Allow and reports which side decided: "primary", "local",
// or the error's text.
func (r *rig) allow(t *testing.T, ctx context.Context) string {
	t.Helper()
	d, err := r.Allow(ctx, "k", 1)
	switch {
	case err != nil:
		return "error: " + err.Error()
	case d.Remaining == 1:
		return "primary"
	case d.Remaining == 2:
		return "local"
	}
	t.Fatalf("decision from nowhere: %+v", d)
	return ""
}

// open opens the breaker of a rig that has seen no call yet with store
// errors (the default MinCalls of them, the first that the default rule
// lets open it), then leaves the primary healthy; it checks the calls were
// answered locally.
func (r *rig) open(t *testing.T) {
	t.Helper()
	r.primary.set(storeDown)
	for i := 0; i < fallback.DefaultMinCalls; i++ {
		if s := r.State(); s != fallback.Closed {
			t.Fatalf("after %d store errors: %v, want closed", i, s)
		}
		if got := r.allow(t, t.Context()); got != "local" {
			t.Fatalf("failure %d: %s, want local", i+1, got)
		}
	}
	if s := r.State(); s != fallback.Open {
		t.Fatalf("after %d store errors: %v, want open", fallback.DefaultMinCalls, s)
	}
	r.primary.set(nil)
}

func (r *rig) wantCalls(t *testing.T, primaryAllows, localAllows int64) {
	t.Helper()
	if p, l := r.primary.allows.Load(), r.local.allows.Load(); p != primaryAllows || l != localAllows {
		t.Errorf("Allow calls: primary %d, local %d; want %d, %d", p, l, primaryAllows, localAllows)
	}
}
