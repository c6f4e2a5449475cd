package rls_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/rls"
)

// spyStore is the in-memory store, whose limiters count the calls they
// get and run hook, when set, around them.
type spyStore struct {
	clock   *coretest.Clock
	allows  atomic.Int64
	refunds atomic.Int64
	mu      sync.Mutex
	hook    func(op, key string, d core.Decision) // "allow" after the decision, "refund" before the refund
	made    map[string]core.Limiter               // by the first limit's name
}

func (s *spyStore) store() rls.Store {
	mem := rls.Memory(core.WithClock(s.clock))
	return func(limits []core.Limit) (core.Limiter, error) {
		lim, err := mem(limits)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		if s.made == nil {
			s.made = map[string]core.Limiter{}
		}
		s.made[limits[0].Name] = lim
		s.mu.Unlock()
		return spy{lim, s}, nil
	}
}

func (s *spyStore) run(op, key string, d core.Decision) {
	s.mu.Lock()
	h := s.hook
	s.mu.Unlock()
	if h != nil {
		h(op, key, d)
	}
}

type spy struct {
	core.Limiter
	s *spyStore
}

func (p spy) Allow(ctx context.Context, key string, cost int) (core.Decision, error) {
	d, err := p.Limiter.Allow(ctx, key, cost)
	p.s.allows.Add(1)
	p.s.run("allow", key, d)
	return d, err
}

func (p spy) Refund(ctx context.Context, key string, cost int) error {
	p.s.run("refund", key, core.Decision{})
	p.s.refunds.Add(1)
	return p.Limiter.Refund(ctx, key, cost)
}

// cacheRig is a Service on the spy store, 20 s into a minute (its
// minute windows end in 40 s), with the local cache.
type cacheRig struct {
	t     *testing.T
	svc   *rls.Service
	spy   *spyStore
	stats *statsRecorder
}

func newCacheRig(t *testing.T, tb table, c rls.Config) *cacheRig {
	t.Helper()
	g := &cacheRig{t: t, spy: &spyStore{clock: coretest.NewClock(time.Unix(1_800_000_020, 0))}, stats: &statsRecorder{}}
	c.Store, c.Clock, c.Stats = g.spy.store(), g.spy.clock, g.stats
	if c.LocalCacheBytes == 0 {
		c.LocalCacheBytes = 1 << 20
	}
	svc, err := rls.New(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.SetRules(tb, tb.rules()); err != nil {
		t.Fatal(err)
	}
	g.svc = svc
	return g
}

// ask sends a request in domain "d" and returns the answer, its codes
// (as rig's) and how many calls its limiters got.
func (g *cacheRig) ask(ds ...*rlcommon.RateLimitDescriptor) (*rlsv3.RateLimitResponse, string, int64) {
	g.t.Helper()
	before := g.spy.allows.Load() + g.spy.refunds.Load()
	resp, err := g.svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "d", Descriptors: ds})
	if err != nil {
		g.t.Fatal(err)
	}
	codes := resp.GetOverallCode().String()
	for _, st := range resp.GetStatuses() {
		codes += fmt.Sprintf(" %s/%d", st.GetCode(), st.GetLimitRemaining())
		if d := st.GetDurationUntilReset(); d != nil {
			codes += fmt.Sprintf("/%ds", d.GetSeconds())
		}
	}
	return resp, codes, g.spy.allows.Load() + g.spy.refunds.Load() - before
}

// retryAfter is the answer's Retry-After field, "" if none.
func retryAfter(r *rlsv3.RateLimitResponse) string {
	for _, h := range r.GetResponseHeadersToAdd() {
		if h.GetKey() == "Retry-After" {
			return h.GetValue()
		}
	}
	return ""
}

// TestLocalCache: under every way of charging, a key a limiter refused
// is refused from the cache, with no limiter asked, with nothing left and
// the reset and Retry-After of its window, until the window ends; then
// the limiter decides again, and admits: the cache never refuses what
// the store would admit. over_limit_with_local_cache counts those hits.
func TestLocalCache(t *testing.T) {
	for _, charging := range []rls.Charging{rls.ChargeAllOrNothing, rls.ChargeAlways, rls.ChargeStopWhenOver} {
		t.Run(charging.String(), func(t *testing.T) {
			a := perMinute("a", "a", 2)
			a.StatsKey = "d.k_a"
			g := newCacheRig(t, table{"d|k=a": {a, "ka"}}, rls.Config{Charging: charging})
			steps := []struct {
				advance time.Duration
				want    string
				calls   int64 // limiter calls
				retry   string
			}{
				{want: "OK OK/1/40s", calls: 1},
				{want: "OK OK/0/40s", calls: 1},
				{want: "OVER_LIMIT OVER_LIMIT/0/40s", calls: 1, retry: "40"}, // the limiter refuses
				{want: "OVER_LIMIT OVER_LIMIT/0/40s", calls: 0, retry: "40"}, // the cache does
				{advance: 39*time.Second + 500*time.Millisecond, want: "OVER_LIMIT OVER_LIMIT/0/1s", calls: 0, retry: "1"},
				{advance: 500 * time.Millisecond, want: "OK OK/1/60s", calls: 1}, // the next window
			}
			for i, s := range steps {
				g.spy.clock.Advance(s.advance)
				resp, got, calls := g.ask(desc("k=a"))
				if got != s.want || calls != s.calls || retryAfter(resp) != s.retry {
					t.Fatalf("step %d: %s, %d limiter calls, Retry-After %q; want %s, %d, %q", i, got, calls, retryAfter(resp), s.want, s.calls, s.retry)
				}
			}
			want := rls.Counts{TotalHits: 6, WithinLimit: 3, NearLimit: 1, OverLimit: 3, OverLimitWithLocalCache: 2}
			if c, _ := g.stats.get("d.k_a"); c != want {
				t.Fatalf("counters: %+v, want %+v", c, want)
			}
		})
	}
}

// TestLocalCacheOff: without the local cache (LocalCacheBytes 0, the
// default), every refusal asks the limiter.
func TestLocalCacheOff(t *testing.T) {
	a := perMinute("a", "a", 1)
	g := newCacheRig(t, table{"d|k=a": {a, "ka"}}, rls.Config{})
	svc, err := rls.New(rls.Config{Store: g.spy.store(), Clock: g.spy.clock})
	if err != nil {
		t.Fatal(err)
	}
	tb := table{"d|k=a": {a, "ka"}}
	if err := svc.SetRules(tb, tb.rules()); err != nil {
		t.Fatal(err)
	}
	if n := rls.LocalCacheSlots(svc); n != 0 {
		t.Fatalf("%d slots without a cache", n)
	}
	g.svc = svc
	for i, want := range []string{"OK OK/0/40s", "OVER_LIMIT OVER_LIMIT/0/40s", "OVER_LIMIT OVER_LIMIT/0/40s"} {
		if _, got, calls := g.ask(desc("k=a")); got != want || calls != 1 {
			t.Fatalf("request %d: %s, %d limiter calls; want %s, 1", i, got, calls, want)
		}
	}
}

// TestLocalCacheRequest: all or nothing, a request an enforced
// descriptor refuses from the cache asks no limiter: its other
// descriptors are neither charged nor counted (as when a rule refusing
// every request names it). Rules in quota mode refuse a request only all
// together: one refused from the cache leaves the others to decide, and
// is not charged. A shadow descriptor refused from the cache is answered
// OK, counted in shadow_mode. A refusal at a cost above 1 is not cached:
// a cost of 1 may still be admitted.
func TestLocalCacheRequest(t *testing.T) {
	a, b := perMinute("a", "a", 1), perMinute("b", "b", 5)
	q, q2 := perMinute("q", "q", 1), perMinute("q2", "q2", 5)
	q.Quota, q2.Quota = true, true
	sh := perMinute("sh", "sh", 1)
	sh.Shadow = true
	c := perMinute("c", "c", 3)
	for _, r := range []*rls.Rule{a, b, q, q2, sh, c} {
		r.StatsKey = "d.k_" + r.Name
	}
	g := newCacheRig(t, table{"d|k=a": {a, "ka"}, "d|k=b": {b, "kb"}, "d|k=q": {q, "kq"}, "d|k=q2": {q2, "kq2"}, "d|k=sh": {sh, "ksh"}, "d|k=c": {c, "kc"}}, rls.Config{})
	costly, two := desc("k=c"), desc("k=c")
	costly.HitsAddend, two.HitsAddend = wrapperspb.UInt64(3), wrapperspb.UInt64(2)
	steps := []struct {
		ds    []*rlcommon.RateLimitDescriptor
		want  string
		calls int64
	}{
		{ds: []*rlcommon.RateLimitDescriptor{desc("k=a")}, want: "OK OK/0/40s", calls: 1},
		// a refuses: b is decided (and refunded), a is cached.
		{ds: []*rlcommon.RateLimitDescriptor{desc("k=a"), desc("k=b")}, want: "OVER_LIMIT OVER_LIMIT/0/40s OK/5/40s", calls: 3},
		// From the cache: no limiter asked, b not decided.
		{ds: []*rlcommon.RateLimitDescriptor{desc("k=a"), desc("k=b")}, want: "OVER_LIMIT OVER_LIMIT/0/40s OK/0", calls: 0},
		{ds: []*rlcommon.RateLimitDescriptor{desc("k=b"), desc("k=a")}, want: "OVER_LIMIT OK/0 OVER_LIMIT/0/40s", calls: 0},
		// b still has all of its 5.
		{ds: []*rlcommon.RateLimitDescriptor{desc("k=b")}, want: "OK OK/4/40s", calls: 1},
		// Quota mode: q refuses alone, and is cached.
		{ds: []*rlcommon.RateLimitDescriptor{desc("k=q")}, want: "OK OK/0/40s", calls: 1},
		{ds: []*rlcommon.RateLimitDescriptor{desc("k=q")}, want: "OVER_LIMIT OVER_LIMIT/0/40s", calls: 1},
		{ds: []*rlcommon.RateLimitDescriptor{desc("k=q")}, want: "OVER_LIMIT OVER_LIMIT/0/40s", calls: 0},
		// With q2, which admits, the request goes on: only q2 is asked.
		{ds: []*rlcommon.RateLimitDescriptor{desc("k=q"), desc("k=q2")}, want: "OK OVER_LIMIT/0/40s OK/4/40s", calls: 1},
		// Shadow: refused by the limiter, then from the cache; OK both.
		{ds: []*rlcommon.RateLimitDescriptor{desc("k=sh")}, want: "OK OK/0/40s", calls: 1},
		{ds: []*rlcommon.RateLimitDescriptor{desc("k=sh")}, want: "OK OK/0/40s", calls: 1},
		{ds: []*rlcommon.RateLimitDescriptor{desc("k=sh")}, want: "OK OK/0/40s", calls: 0},
		// A shadow descriptor is decided once the request is admitted:
		// refused by a, the request leaves it undecided.
		{ds: []*rlcommon.RateLimitDescriptor{desc("k=a"), desc("k=sh")}, want: "OVER_LIMIT OVER_LIMIT/0/40s OK/0", calls: 0},
		// c has 1 left: a cost of 3 is refused, and not cached.
		{ds: []*rlcommon.RateLimitDescriptor{two}, want: "OK OK/1/40s", calls: 1},
		{ds: []*rlcommon.RateLimitDescriptor{costly}, want: "OVER_LIMIT OVER_LIMIT/1/40s", calls: 1},
		{ds: []*rlcommon.RateLimitDescriptor{desc("k=c")}, want: "OK OK/0/40s", calls: 1},
		{ds: []*rlcommon.RateLimitDescriptor{costly}, want: "OVER_LIMIT OVER_LIMIT/0/40s", calls: 1},
		{ds: []*rlcommon.RateLimitDescriptor{costly}, want: "OVER_LIMIT OVER_LIMIT/0/40s", calls: 1},
		// A refusal of cost 1 is cached, and refuses any cost.
		{ds: []*rlcommon.RateLimitDescriptor{desc("k=c")}, want: "OVER_LIMIT OVER_LIMIT/0/40s", calls: 1},
		{ds: []*rlcommon.RateLimitDescriptor{costly}, want: "OVER_LIMIT OVER_LIMIT/0/40s", calls: 0},
	}
	for i, s := range steps {
		if _, got, calls := g.ask(s.ds...); got != s.want || calls != s.calls {
			t.Fatalf("step %d: %s, %d limiter calls; want %s, %d", i, got, calls, s.want, s.calls)
		}
	}
	for key, want := range map[string]rls.Counts{
		"d.k_a":  {TotalHits: 5, WithinLimit: 1, NearLimit: 1, OverLimit: 4, OverLimitWithLocalCache: 3},
		"d.k_b":  {TotalHits: 4, WithinLimit: 2},
		"d.k_q":  {TotalHits: 4, WithinLimit: 1, NearLimit: 1, OverLimit: 3, OverLimitWithLocalCache: 2},
		"d.k_sh": {TotalHits: 4, WithinLimit: 1, NearLimit: 1, OverLimit: 2, ShadowMode: 2, OverLimitWithLocalCache: 1},
	} {
		if c, _ := g.stats.get(key); c != want {
			t.Errorf("counters of %s: %+v, want %+v", key, c, want)
		}
	}
}

// TestLocalCacheRefunds: units given back end a key's entry, so that the
// cache never refuses what the store would admit: the hits a request
// gives back (is_negative_hits), and a check's (hits_addend 0) charge
// given back while another request was refused for want of that unit,
// whichever of the refusal's entry and the refund comes first.
func TestLocalCacheRefunds(t *testing.T) {
	probe := func() *rlcommon.RateLimitDescriptor {
		d := desc("k=a")
		d.HitsAddend = wrapperspb.UInt64(0)
		return d
	}
	setup := func(t *testing.T) *cacheRig {
		return newCacheRig(t, table{"d|k=a": {perMinute("a", "a", 1), "ka"}}, rls.Config{})
	}
	// background sends a request of ds, answered on the channel.
	background := func(g *cacheRig, ds ...*rlcommon.RateLimitDescriptor) chan *rlsv3.RateLimitResponse {
		out := make(chan *rlsv3.RateLimitResponse, 1)
		go func() {
			resp, err := g.svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "d", Descriptors: ds})
			if err != nil {
				t.Error(err)
			}
			out <- resp
		}()
		return out
	}
	t.Run("is_negative_hits", func(t *testing.T) {
		g := setup(t)
		back := desc("k=a")
		back.IsNegativeHits = true
		for i, s := range []struct {
			ds    *rlcommon.RateLimitDescriptor
			want  string
			calls int64
		}{
			{desc("k=a"), "OK OK/0/40s", 1},
			{desc("k=a"), "OVER_LIMIT OVER_LIMIT/0/40s", 1},
			{desc("k=a"), "OVER_LIMIT OVER_LIMIT/0/40s", 0},
			{back, "OK OK/0", 1},
			{desc("k=a"), "OK OK/0/40s", 1},
		} {
			if _, got, calls := g.ask(s.ds); got != s.want || calls != s.calls {
				t.Fatalf("step %d: %s, %d limiter calls; want %s, %d", i, got, calls, s.want, s.calls)
			}
		}
	})
	t.Run("entry before the refund", func(t *testing.T) {
		g := setup(t)
		charged, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		g.spy.hook = func(op, key string, _ core.Decision) {
			if op == "refund" {
				once.Do(func() { close(charged); <-release })
			}
		}
		check := background(g, probe()) // charges a's one unit, and waits to give it back
		<-charged
		// Refused for want of the unit the check holds: cached.
		if _, got, _ := g.ask(desc("k=a")); got != "OVER_LIMIT OVER_LIMIT/0/40s" {
			t.Fatalf("during the check: %s", got)
		}
		if n := rls.LocalCacheLen(g.svc); n != 1 {
			t.Fatalf("%d entries, want the refusal's", n)
		}
		close(release)
		<-check
		if n := rls.LocalCacheLen(g.svc); n != 0 {
			t.Fatalf("%d entries after the refund, want none", n)
		}
		if _, got, calls := g.ask(desc("k=a")); got != "OK OK/0/40s" || calls != 1 {
			t.Fatalf("after the check: %s, %d limiter calls", got, calls)
		}
	})
	t.Run("refund before the entry", func(t *testing.T) {
		g := setup(t)
		charged, refused, checked := make(chan struct{}), make(chan struct{}), make(chan struct{})
		var chargedOnce, refusedOnce sync.Once
		g.spy.hook = func(op, key string, d core.Decision) {
			switch {
			case op == "refund":
				chargedOnce.Do(func() { close(charged); <-refused })
			case op == "allow" && !d.Allowed:
				refusedOnce.Do(func() { close(refused); <-checked })
			}
		}
		check := background(g, probe())
		<-charged
		// Refused for want of the check's unit, but its entry comes after
		// the check gave the unit back.
		req := background(g, desc("k=a"))
		<-check
		close(checked)
		if r := <-req; r.GetOverallCode() != rlsv3.RateLimitResponse_OVER_LIMIT {
			t.Fatalf("during the check: %v", r)
		}
		if n := rls.LocalCacheLen(g.svc); n != 0 {
			t.Fatalf("%d entries, want none: the refusal came before the refund", n)
		}
		if _, got, calls := g.ask(desc("k=a")); got != "OK OK/0/40s" || calls != 1 {
			t.Fatalf("after the check: %s, %d limiter calls", got, calls)
		}
	})
}

// TestLocalCacheSize: the cache holds LocalCacheBytes /
// LocalCacheEntryBytes entries, rounded down to a power of two, and
// never more, however many keys are refused.
func TestLocalCacheSize(t *testing.T) {
	for _, c := range []struct{ bytes, slots int }{
		{1, 1}, {127, 1}, {128, 1}, {255, 1}, {256, 2}, {1000, 4}, {1024, 8}, {1 << 20, 8192}, {100 << 20, 524288},
	} {
		t.Run(fmt.Sprint(c.bytes), func(t *testing.T) {
			svc, err := rls.New(rls.Config{Store: rls.Memory(), LocalCacheBytes: c.bytes})
			if err != nil {
				t.Fatal(err)
			}
			if n := rls.LocalCacheSlots(svc); n != c.slots {
				t.Fatalf("%d slots, want %d", n, c.slots)
			}
		})
	}
	t.Run("bounded", func(t *testing.T) {
		tb := table{}
		a := perMinute("a", "a", 1)
		for i := range 64 {
			tb[fmt.Sprintf("d|k=%d", i)] = match{a, fmt.Sprint("k", i)}
		}
		g := newCacheRig(t, tb, rls.Config{LocalCacheBytes: 4 * rls.LocalCacheEntryBytes})
		for i := range 64 {
			for range 2 {
				g.ask(desc(fmt.Sprint("k=", i)))
			}
			if n := rls.LocalCacheLen(g.svc); n < 1 || n > 4 {
				t.Fatalf("after %d refused keys: %d entries, want 1 to 4", i+1, n)
			}
		}
	})
	t.Run("negative", func(t *testing.T) {
		_, err := rls.New(rls.Config{Store: rls.Memory(), LocalCacheBytes: -1})
		if err == nil || err.Error() != "rls: Config.LocalCacheBytes -1: want 0 (no local cache) or more" {
			t.Fatalf("got %v", err)
		}
	})
}

// TestLocalCacheConcurrent: requests and checks (hits_addend 0, whose
// charges are given back) from many goroutines on a few keys: no key
// admits more than its limit, and, once they are done, each key admits
// exactly what its limit has left: no refusal the cache keeps outlives
// the units given back. Run with -race.
func TestLocalCacheConcurrent(t *testing.T) {
	const keys, limit, workers, each = 4, 10, 8, 300
	tb := table{}
	a := perMinute("a", "a", limit)
	for i := range keys {
		tb[fmt.Sprintf("d|k=%d", i)] = match{a, fmt.Sprint("k", i)}
	}
	g := newCacheRig(t, tb, rls.Config{})
	// Other requests run between a check's charge and its refund.
	g.spy.hook = func(op, _ string, _ core.Decision) {
		if op == "refund" {
			runtime.Gosched()
		}
	}
	var admitted [keys]atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				k := (w + i) % keys
				d := desc(fmt.Sprint("k=", k))
				check := (w*each+i)%3 == 0
				if check {
					d.HitsAddend = wrapperspb.UInt64(0)
				}
				g.spy.clock.Advance(time.Microsecond)
				resp, err := g.svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*rlcommon.RateLimitDescriptor{d}})
				if err != nil {
					t.Error(err)
					return
				}
				if !check && resp.GetOverallCode() == rlsv3.RateLimitResponse_OK {
					if n := admitted[k].Add(1); n > limit {
						t.Errorf("key %d: %d admitted, limit %d", k, n, limit)
					}
				}
			}
		}()
	}
	wg.Wait()
	for k := range keys {
		for {
			_, got, _ := g.ask(desc(fmt.Sprint("k=", k)))
			if got[:2] != "OK" {
				break
			}
			admitted[k].Add(1)
		}
		if n := admitted[k].Load(); n != limit {
			t.Errorf("key %d: %d admitted in all, want %d", k, n, limit)
		}
	}
}

// TestLocalCacheStack: a rule of several limits is refused from the cache
// by the limit that refused it, named as its limiter names it, until
// that limit admits again.
func TestLocalCacheStack(t *testing.T) {
	s := &rls.Rule{ID: "s", Name: "s", Limits: []core.Limit{core.PerMinute(2).WithAlgorithm(core.FixedWindow), core.PerHour(3).WithAlgorithm(core.FixedWindow)},
		RequestsPerUnit: 2, Unit: rlsv3.RateLimitResponse_RateLimit_MINUTE}
	var seen []core.Event
	g := newCacheRig(t, table{"d|k=s": {s, "ks"}}, rls.Config{Observer: core.ObserverFunc(func(_ context.Context, e core.Event) { seen = append(seen, e) })})
	// 20 s into a minute, 20 s into an hour: the minute ends in 40 s, the hour in 3,580 s.
	steps := []struct {
		advance time.Duration
		want    string
		calls   int64
		limit   string // of the decision
		retry   time.Duration
	}{
		{want: "OK OK/1/40s", calls: 1, limit: "2-per-min"},
		{want: "OK OK/0/40s", calls: 1, limit: "2-per-min"},
		{want: "OVER_LIMIT OVER_LIMIT/0/40s", calls: 1, limit: "2-per-min", retry: 40 * time.Second},
		{want: "OVER_LIMIT OVER_LIMIT/0/40s", calls: 0, limit: "2-per-min", retry: 40 * time.Second},
		{advance: 40 * time.Second, want: "OK OK/0/3540s", calls: 1, limit: "3-per-h"},
		{want: "OVER_LIMIT OVER_LIMIT/0/3540s", calls: 1, limit: "3-per-h", retry: 3540 * time.Second},
		{advance: time.Minute, want: "OVER_LIMIT OVER_LIMIT/0/3480s", calls: 0, limit: "3-per-h", retry: 3480 * time.Second},
	}
	for i, st := range steps {
		g.spy.clock.Advance(st.advance)
		seen = seen[:0]
		_, got, calls := g.ask(desc("k=s"))
		if got != st.want || calls != st.calls {
			t.Fatalf("step %d: %s, %d limiter calls; want %s, %d", i, got, calls, st.want, st.calls)
		}
		if len(seen) != 1 || seen[0].Decision.Limit.Name != st.limit || seen[0].Decision.RetryAfter != st.retry {
			t.Fatalf("step %d: observed %+v, want a decision of %s, RetryAfter %v", i, seen, st.limit, st.retry)
		}
	}
}
