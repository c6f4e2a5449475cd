package overload_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/overload"
)

// guard is an overload guard for tests: it sheds while shed is set, and
// admits otherwise with a lease that records how the request ended.
type guard struct {
	shed  bool
	fail  error
	asked int
	ended []core.Ending
}

func (g *guard) Allow(context.Context, string, int) (core.Decision, error) {
	g.asked++
	switch {
	case g.fail != nil:
		return core.Decision{}, g.fail
	case g.shed:
		return core.Decision{Shed: true, RetryAfter: time.Second}, nil
	}
	return core.Decision{Allowed: true, Lease: core.NewLease(func(_ context.Context, e core.Ending) error {
		g.ended = append(g.ended, e)
		return nil
	})}, nil
}

func (g *guard) Refund(context.Context, string, int) error {
	return errors.New("a guard is never refunded")
}

// TestProtect: the client's quota is asked first; a shed request gets the
// guard's refusal and its charge back; an admitted one gets the quota's
// decision and the guard's lease; a request the quota refuses never
// reaches the guard.
func TestProtect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := coretest.NewClock(coretest.T0)
	rate := core.MustNew(core.PerMinute(2).WithAlgorithm(core.GCRA), core.WithClock(clock))
	g := &guard{}
	lim := overload.Protect(rate, g)

	g.shed = true
	d, err := lim.Allow(ctx, "k", 1)
	if err != nil || d.Allowed || !d.Shed || d.RetryAfter != time.Second {
		t.Fatalf("shed: %+v, %v; want the guard's refusal", d, err)
	}
	g.shed = false
	d, err = lim.Allow(ctx, "k", 1)
	if err != nil || !d.Allowed || d.Remaining != 1 || d.Lease.IsZero() {
		t.Fatalf("admitted: %+v, %v; want the quota's decision (1 left: the shed one was given back) with the guard's lease", d, err)
	}
	if err := d.Lease.End(ctx, core.EndDropped); err != nil || len(g.ended) != 1 || g.ended[0] != core.EndDropped {
		t.Fatalf("ending the lease: %v, the guard heard %v; want [dropped]", err, g.ended)
	}
	if d, _ = lim.Allow(ctx, "k", 1); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("the last unit: %+v", d)
	}
	asked := g.asked
	if d, _ = lim.Allow(ctx, "k", 1); d.Allowed || d.Shed || d.RetryAfter != 30*time.Second {
		t.Fatalf("over the quota: %+v, want the quota's refusal", d)
	}
	if g.asked != asked {
		t.Fatal("the guard was asked about a request the quota refused")
	}
	// A guard that fails: its error, and the charge back.
	clock.Advance(time.Minute)
	g.fail = errors.New("guard broken")
	if _, err := lim.Allow(ctx, "k", 1); !errors.Is(err, g.fail) {
		t.Fatalf("a failing guard: %v", err)
	}
	g.fail = nil
	if d, _ = lim.Allow(ctx, "k", 1); d.Remaining != 1 {
		t.Fatalf("after the guard failed: %+v, want 1 left (the charge given back)", d)
	}
}

// TestProtectLeases: a quota that holds a lease (a concurrency limit) and
// a guard: ending the request ends both; a shed releases the quota's.
func TestProtectLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rate := core.MustNew(core.InFlight(1).WithAlgorithm(core.Concurrency))
	g := &guard{}
	lim := overload.Protect(rate, g)
	d, err := lim.Allow(ctx, "k", 1)
	if err != nil || !d.Allowed {
		t.Fatalf("%+v, %v", d, err)
	}
	if r, _ := rate.Allow(ctx, "k", 1); r.Allowed {
		t.Fatal("the quota's slot is not held")
	}
	if err := d.Lease.Release(ctx); err != nil || len(g.ended) != 1 || g.ended[0] != core.EndDone {
		t.Fatalf("release: %v, the guard heard %v", err, g.ended)
	}
	g.shed = true
	if d, _ := lim.Allow(ctx, "k", 1); !d.Shed {
		t.Fatalf("%+v, want shed", d)
	}
	r, _ := rate.Allow(ctx, "k", 1) // the slot the shed request took is back
	if !r.Allowed {
		t.Fatal("a shed request kept the quota's slot")
	}
	_ = r.Lease.Release(ctx)
}

// TestProtectPolicies: the limiter lists the quota's policies when the
// quota does, and is no core.PolicyLister otherwise.
func TestProtectPolicies(t *testing.T) {
	t.Parallel()
	s, err := core.NewStack([]core.Limit{core.PerSecond(5).WithName("second"), core.PerHour(100).WithName("hour")})
	if err != nil {
		t.Fatal(err)
	}
	pl, ok := overload.Protect(s, &guard{}).(core.PolicyLister)
	if !ok || len(pl.Policies()) != 2 {
		t.Fatalf("a stack's policies: %v, %v", ok, pl)
	}
	if _, ok := overload.Protect(core.MustNew(core.PerSecond(1)), &guard{}).(core.PolicyLister); ok {
		t.Fatal("a single limit's protection claims to list policies")
	}
}
