package rls_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/rls"
)

// memMulti is a Multi in memory sharing its limiters with its Store, as
// redisstore's Multi shares keys with its limiters: one core limiter per
// list of limits. It counts its calls and the Store's limiters' calls.
type memMulti struct {
	clock *coretest.Clock
	err   error // when set, AllowAll fails with it

	mu    sync.Mutex
	lims  map[string]core.Limiter
	calls int // AllowAll calls
	one   int // the Store's limiters' Allow calls
}

func (m *memMulti) get(limits []core.Limit) core.Limiter {
	m.mu.Lock()
	defer m.mu.Unlock()
	sig := fmt.Sprint(limits)
	if m.lims[sig] == nil {
		lim, _ := rls.Memory(core.WithClock(m.clock))(limits)
		m.lims[sig] = lim
	}
	return m.lims[sig]
}

func (m *memMulti) store(limits []core.Limit) (core.Limiter, error) {
	return counted{m.get(limits), m}, nil
}

type counted struct {
	core.Limiter
	m *memMulti
}

func (c counted) Allow(ctx context.Context, key string, cost int) (core.Decision, error) {
	c.m.mu.Lock()
	c.m.one++
	c.m.mu.Unlock()
	return c.Limiter.Allow(ctx, key, cost)
}

func (m *memMulti) AllowAll(ctx context.Context, cs []rls.Charge) ([]core.Decision, error) {
	m.mu.Lock()
	m.calls++
	m.mu.Unlock()
	if m.err != nil {
		return nil, m.err
	}
	ds := make([]core.Decision, len(cs))
	all := true
	for i, c := range cs {
		d, err := m.get(c.Limits).Allow(ctx, c.Key, c.Cost)
		if err != nil {
			return nil, err
		}
		ds[i], all = d, all && d.Allowed
	}
	if !all {
		for i, c := range cs {
			if ds[i].Allowed {
				_ = m.get(c.Limits).Refund(ctx, c.Key, c.Cost)
			}
		}
	}
	return ds, nil
}

func newMultiRig(t *testing.T, tb table, c rls.Config) (*rig, *memMulti) {
	m := &memMulti{lims: map[string]core.Limiter{}, clock: coretest.NewClock(time.Unix(1_800_000_000, 0))}
	c.Store, c.Multi = m.store, m
	g := newRig(t, tb, c)
	g.clock = m.clock
	return g, m
}

// TestMultiOneCall: with a Multi, a request's enforced descriptors are one
// call of it, all or nothing, and the answers are those of the limiters
// one at a time; shadow rules, quota mode and hits given back still go to
// the Store's limiters.
func TestMultiOneCall(t *testing.T) {
	a, b := perMinute("a", "a", 2), perMinute("b", "b", 1)
	sh := perMinute("s", "s", 1)
	sh.Shadow = true
	q := perMinute("q", "q", 5)
	q.Quota = true
	g, m := newMultiRig(t, table{"d|k=a": {a, "ka"}, "d|k=b": {b, "kb"}, "d|k=s": {sh, "ks"}, "d|k=q": {q, "kq"}}, rls.Config{})
	steps := []struct {
		ds         []*rlcommon.RateLimitDescriptor
		want       string
		calls, one int
	}{
		{[]*rlcommon.RateLimitDescriptor{desc("k=a"), desc("k=b")}, "OK OK/1 OK/0", 1, 0},
		{[]*rlcommon.RateLimitDescriptor{desc("k=a"), desc("k=b")}, "OVER_LIMIT OK/1 OVER_LIMIT/0", 1, 0},
		{[]*rlcommon.RateLimitDescriptor{desc("k=a")}, "OK OK/0", 1, 0},
		{[]*rlcommon.RateLimitDescriptor{desc("k=zzz")}, "OK OK/0", 0, 0},
		// A shadow rule: the Multi for the enforced, its limiter after.
		{[]*rlcommon.RateLimitDescriptor{desc("k=s"), desc("k=zzz")}, "OK OK/0 OK/0", 0, 1},
		// Quota mode: the limiters, one at a time.
		{[]*rlcommon.RateLimitDescriptor{desc("k=q")}, "OK OK/4", 0, 1},
	}
	for i, s := range steps {
		calls, one := m.calls, m.one
		if _, got := g.ask(0, s.ds...); got != s.want {
			t.Fatalf("step %d: %s, want %s", i, got, s.want)
		}
		if m.calls-calls != s.calls || m.one-one != s.one {
			t.Fatalf("step %d: %d Multi calls and %d limiter calls, want %d and %d", i, m.calls-calls, m.one-one, s.calls, s.one)
		}
	}
}

// TestMultiErrors: a store error follows the failure mode; any other error
// of the Multi sends the request to the limiters.
func TestMultiErrors(t *testing.T) {
	a := perMinute("a", "a", 1)
	for _, c := range []struct {
		err  error
		mode core.FailureMode
		want string
		one  int
	}{
		{&core.StoreError{Op: "allow", Err: errors.New("connection refused")}, core.FailClosed, "OVER_LIMIT OVER_LIMIT/0", 0},
		{&core.StoreError{Op: "allow", Err: errors.New("connection refused")}, core.FailOpen, "OK OK/0", 0},
		{errors.New("cannot decide that"), core.FailClosed, "OK OK/0", 1},
	} {
		g, m := newMultiRig(t, table{"d|a=1": {a, "ka"}}, rls.Config{Failure: c.mode})
		m.err = c.err
		if _, got := g.ask(0, desc("a=1")); got != c.want || m.one != c.one {
			t.Fatalf("%v, %v: %s after %d limiter calls, want %s after %d", c.err, c.mode, got, m.one, c.want, c.one)
		}
		if c.one == 0 {
			if e := g.seen[0]; e.Outcome != core.OutcomeStoreError || e.Err == nil {
				t.Fatalf("%v: observed %+v", c.mode, e)
			}
		}
	}
}
