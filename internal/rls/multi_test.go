package rls_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

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

	mu      sync.Mutex
	lims    map[string]core.Limiter
	calls   int    // AllowAll calls
	refunds int    // RefundAll calls
	one     int    // the Store's limiters' Allow calls
	local   []bool // the Local of each charge of the last AllowAll
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
	m.local = m.local[:0]
	for _, c := range cs {
		m.local = append(m.local, c.Local)
	}
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

func (m *memMulti) RefundAll(ctx context.Context, cs []rls.Charge) error {
	m.mu.Lock()
	m.refunds++
	m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	for _, c := range cs {
		if err := m.get(c.Limits).Refund(ctx, c.Key, c.Cost); err != nil {
			return err
		}
	}
	return nil
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
// one at a time; so are its shadow descriptors, once it is admitted, and
// the hits it gives back, in one more call each. A shadow call that one
// descriptor refuses charges none: the others are decided alone. A rule
// that refuses every request refuses without a call.
func TestMultiOneCall(t *testing.T) {
	a, b := perMinute("a", "a", 2), perMinute("b", "b", 1)
	sh, sh5 := perMinute("s", "s", 1), perMinute("s5", "s5", 5)
	sh.Shadow, sh5.Shadow = true, true
	q := perMinute("q", "q", 5)
	q.Quota = true
	z := &rls.Rule{ID: "z", DenyAll: true, Unit: rlsv3.RateLimitResponse_RateLimit_MINUTE}
	g, m := newMultiRig(t, table{"d|k=a": {a, "ka"}, "d|k=b": {b, "kb"}, "d|k=s": {sh, "ks"}, "d|k=s5": {sh5, "ks5"},
		"d|k=q": {q, "kq"}, "d|k=z": {z, "kz"}}, rls.Config{})
	back := func(kv string) *rlcommon.RateLimitDescriptor {
		d := desc(kv)
		d.HitsAddend, d.IsNegativeHits = wrapperspb.UInt64(1), true
		return d
	}
	ds := func(d ...*rlcommon.RateLimitDescriptor) []*rlcommon.RateLimitDescriptor { return d }
	steps := []struct {
		ds                  []*rlcommon.RateLimitDescriptor
		want                string
		calls, refunds, one int
	}{
		{ds(desc("k=a"), desc("k=b")), "OK OK/1 OK/0", 1, 0, 0},
		{ds(desc("k=a"), desc("k=b")), "OVER_LIMIT OK/1 OVER_LIMIT/0", 1, 0, 0},
		{ds(desc("k=a")), "OK OK/0", 1, 0, 0},
		{ds(desc("k=zzz")), "OK OK/0", 0, 0, 0},
		// Shadow rules: the Multi for the enforced, then for the shadow.
		{ds(desc("k=s"), desc("k=zzz")), "OK OK/0 OK/0", 1, 0, 0},
		{ds(desc("k=a"), desc("k=s5")), "OVER_LIMIT OVER_LIMIT/0 OK/0", 1, 0, 0}, // refused: no shadow
		{ds(desc("k=s"), desc("k=s5")), "OK OK/0 OK/4", 1, 0, 1},                 // s refuses: s5 alone
		{ds(desc("k=s5")), "OK OK/3", 1, 0, 0},                                   // charged once
		// Quota mode: the Multi too (TestMultiQuota).
		{ds(desc("k=q")), "OK OK/4", 1, 0, 0},
		// Hits given back: one RefundAll; a has one again.
		{ds(back("k=a"), desc("k=zzz")), "OK OK/0 OK/0", 0, 1, 0},
		// A rule refusing all: no call, and a is not charged...
		{ds(desc("k=z"), desc("k=a")), "OVER_LIMIT OVER_LIMIT/0 OK/0", 0, 0, 0},
		// ... so its one is still there.
		{ds(desc("k=a")), "OK OK/0", 1, 0, 0},
	}
	for i, s := range steps {
		calls, refunds, one := m.calls, m.refunds, m.one
		if _, got := g.ask(0, s.ds...); got != s.want {
			t.Fatalf("step %d: %s, want %s", i, got, s.want)
		}
		if m.calls-calls != s.calls || m.refunds-refunds != s.refunds || m.one-one != s.one {
			t.Fatalf("step %d: %d Multi calls, %d refunds and %d limiter calls, want %d, %d and %d",
				i, m.calls-calls, m.refunds-refunds, m.one-one, s.calls, s.refunds, s.one)
		}
	}
}

// TestMultiQuota: rules in quota mode refuse a request only when all of
// them refuse; with a Multi, a request some of them refuse is decided again
// without them, in a second call, and they are not charged.
func TestMultiQuota(t *testing.T) {
	q1, q2 := perMinute("q1", "q1", 1), perMinute("q2", "q2", 2)
	q1.Quota, q2.Quota = true, true
	a := perMinute("a", "a", 10)
	g, m := newMultiRig(t, table{"d|q1=1": {q1, "k1"}, "d|q2=1": {q2, "k2"}, "d|a=1": {a, "ka"}}, rls.Config{})
	for i, step := range []struct {
		want  string
		calls int
	}{
		{"OK OK/0 OK/1 OK/9", 1},
		{"OK OVER_LIMIT/0 OK/0 OK/8", 2}, // q1 is out, q2 still admits: q1 not charged
		{"OVER_LIMIT OVER_LIMIT/0 OVER_LIMIT/0 OK/8", 1},
	} {
		calls := m.calls
		if _, got := g.ask(0, desc("q1=1"), desc("q2=1"), desc("a=1")); got != step.want || m.calls-calls != step.calls || m.one != 0 {
			t.Fatalf("step %d: %s after %d Multi calls and %d limiter calls, want %s after %d and none", i, got, m.calls-calls, m.one, step.want, step.calls)
		}
	}
	// a was charged by the two admitted requests alone.
	if _, got := g.ask(0, desc("a=1")); got != "OK OK/7" {
		t.Fatalf("a after: %s, want OK OK/7", got)
	}
}

// TestMultiErrors: a store error follows the failure mode; any other error
// of the Multi sends the request to the limiters, and so does a store
// error on several servers (rls.ErrPartial) when failing open.
func TestMultiErrors(t *testing.T) {
	a := perMinute("a", "a", 1)
	partial := fmt.Errorf("%w (%w)", &core.StoreError{Op: "allow", Err: errors.New("a master is down")}, rls.ErrPartial)
	for _, c := range []struct {
		err  error
		mode core.FailureMode
		want string
		one  int
	}{
		{&core.StoreError{Op: "allow", Err: errors.New("connection refused")}, core.FailClosed, "OVER_LIMIT OVER_LIMIT/0", 0},
		{&core.StoreError{Op: "allow", Err: errors.New("connection refused")}, core.FailOpen, "OK OK/0", 0},
		{errors.New("cannot decide that"), core.FailClosed, "OK OK/0", 1},
		// Keys on several servers, some of which may answer: failing open,
		// the limiters decide, so that those keys are still counted.
		{partial, core.FailOpen, "OK OK/0", 1},
		{partial, core.FailClosed, "OVER_LIMIT OVER_LIMIT/0", 0},
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
