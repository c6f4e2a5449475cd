package rls_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/rls"
)

// table is a Rules of fixed answers: "domain|k=v,k=v" to a rule and key.
type table map[string]match

type match struct {
	r   *rls.Rule
	key string
}

func (t table) Match(domain string, d *rlcommon.RateLimitDescriptor) (*rls.Rule, string) {
	m := t[domain+"|"+entries(d)]
	return m.r, m.key
}

func entries(d *rlcommon.RateLimitDescriptor) string {
	var parts []string
	for _, e := range d.GetEntries() {
		parts = append(parts, e.GetKey()+"="+e.GetValue())
	}
	return strings.Join(parts, ",")
}

func (t table) rules() []*rls.Rule {
	seen := map[*rls.Rule]bool{}
	var all []*rls.Rule
	for _, m := range t {
		if m.r != nil && !seen[m.r] {
			seen[m.r] = true
			all = append(all, m.r)
		}
	}
	return all
}

// desc is a descriptor of "k=v" entries.
func desc(kvs ...string) *rlcommon.RateLimitDescriptor {
	d := &rlcommon.RateLimitDescriptor{}
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		d.Entries = append(d.Entries, &rlcommon.RateLimitDescriptor_Entry{Key: k, Value: v})
	}
	return d
}

func perMinute(id, name string, n int) *rls.Rule {
	return &rls.Rule{ID: id, Name: name, Limits: []core.Limit{core.PerMinute(n).WithAlgorithm(core.FixedWindow).WithName(name)},
		RequestsPerUnit: uint32(n), Unit: rlsv3.RateLimitResponse_RateLimit_MINUTE}
}

// rig is a Service on a frozen clock over t.
type rig struct {
	t     *testing.T
	svc   *rls.Service
	clock *coretest.Clock
	seen  []core.Event
	mu    sync.Mutex
}

func newRig(t *testing.T, tb table, c rls.Config) *rig {
	t.Helper()
	g := &rig{t: t, clock: coretest.NewClock(time.Unix(1_800_000_000, 0))}
	if c.Store == nil {
		c.Store = rls.Memory(core.WithClock(g.clock))
	}
	c.Observer = core.ObserverFunc(func(_ context.Context, e core.Event) {
		g.mu.Lock()
		g.seen = append(g.seen, e)
		g.mu.Unlock()
	})
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

// ask sends a request in domain "d" and returns its codes: the overall
// one, then each descriptor's ("OK OVER_LIMIT ...").
func (g *rig) ask(hits uint32, ds ...*rlcommon.RateLimitDescriptor) (*rlsv3.RateLimitResponse, string) {
	g.t.Helper()
	resp, err := g.svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "d", Descriptors: ds, HitsAddend: hits})
	if err != nil {
		g.t.Fatal(err)
	}
	codes := []string{resp.GetOverallCode().String()}
	for _, st := range resp.GetStatuses() {
		codes = append(codes, fmt.Sprintf("%s/%d", st.GetCode(), st.GetLimitRemaining()))
	}
	return resp, strings.Join(codes, " ")
}

func TestAllOrNothing(t *testing.T) {
	a, b := perMinute("a", "a", 2), perMinute("b", "b", 1)
	g := newRig(t, table{"d|k=a": {a, "ka"}, "d|k=b": {b, "kb"}}, rls.Config{})
	steps := []struct {
		ds   []*rlcommon.RateLimitDescriptor
		want string
	}{
		{[]*rlcommon.RateLimitDescriptor{desc("k=a"), desc("k=b")}, "OK OK/1 OK/0"},
		// b refuses: a is not charged (its remaining is as before).
		{[]*rlcommon.RateLimitDescriptor{desc("k=a"), desc("k=b")}, "OVER_LIMIT OK/1 OVER_LIMIT/0"},
		{[]*rlcommon.RateLimitDescriptor{desc("k=b"), desc("k=a")}, "OVER_LIMIT OVER_LIMIT/0 OK/1"},
		// So a still has one left.
		{[]*rlcommon.RateLimitDescriptor{desc("k=a")}, "OK OK/0"},
		{[]*rlcommon.RateLimitDescriptor{desc("k=a")}, "OVER_LIMIT OVER_LIMIT/0"},
		// A descriptor no rule matches is OK and changes nothing.
		{[]*rlcommon.RateLimitDescriptor{desc("k=zzz")}, "OK OK/0"},
	}
	for i, s := range steps {
		if _, got := g.ask(0, s.ds...); got != s.want {
			t.Fatalf("step %d: %s, want %s", i, got, s.want)
		}
	}
	g.clock.Advance(time.Minute)
	if _, got := g.ask(0, desc("k=a"), desc("k=b")); got != "OK OK/1 OK/0" {
		t.Fatalf("next window: %s", got)
	}
}

func TestUnlimitedReplacesShadow(t *testing.T) {
	free := &rls.Rule{ID: "free", Unlimited: true}
	x := perMinute("x", "x", 1)
	y := perMinute("y", "y", 5)
	y.Replaces = []string{"x"}
	sh := perMinute("sh", "sh", 1)
	sh.Shadow = true
	g := newRig(t, table{"d|free=1": {free, "f"}, "d|x=1": {x, "kx"}, "d|y=1": {y, "ky"}, "d|sh=1": {sh, "ks"}}, rls.Config{})

	resp, got := g.ask(0, desc("free=1"))
	if got != fmt.Sprintf("OK OK/%d", uint32(math.MaxUint32)) || resp.GetStatuses()[0].GetCurrentLimit() != nil {
		t.Fatalf("unlimited: %s %v", got, resp.GetStatuses()[0])
	}
	// y replaces x: x is neither checked nor charged.
	for i := range 3 {
		resp, got = g.ask(0, desc("x=1"), desc("y=1"))
		if want := fmt.Sprintf("OK OK/0 OK/%d", 4-i); got != want {
			t.Fatalf("replaced, call %d: %s, want %s", i, got, want)
		}
		if resp.GetStatuses()[0].GetCurrentLimit() != nil {
			t.Fatal("a replaced rule reports a limit")
		}
	}
	if _, got = g.ask(0, desc("x=1")); got != "OK OK/0" {
		t.Fatalf("x alone, never charged before: %s", got)
	}
	if _, got = g.ask(0, desc("x=1")); got != "OVER_LIMIT OVER_LIMIT/0" {
		t.Fatalf("x alone again: %s", got)
	}
	// A shadow rule's refusal refuses nothing; it is charged only with
	// the request admitted.
	if _, got = g.ask(0, desc("sh=1")); got != "OK OK/0" {
		t.Fatalf("shadow 1: %s", got)
	}
	resp, got = g.ask(0, desc("sh=1"))
	if got != "OK OK/0" {
		t.Fatalf("shadow 2: %s", got)
	}
	for _, h := range resp.GetResponseHeadersToAdd() {
		if h.GetKey() == "Retry-After" {
			t.Fatal("Retry-After on an admitted (shadow) request")
		}
	}
	last := g.seen[len(g.seen)-1]
	if !last.Shadow || last.Outcome != core.OutcomeDenied || !last.Admitted {
		t.Fatalf("shadow refusal observed as %+v", last)
	}
}

func TestShadowNotChargedWhenRefused(t *testing.T) {
	a := perMinute("a", "a", 1)
	sh := perMinute("sh", "sh", 2)
	sh.Shadow = true
	g := newRig(t, table{"d|a=1": {a, "ka"}, "d|sh=1": {sh, "ks"}}, rls.Config{})
	g.ask(0, desc("a=1"), desc("sh=1")) // a: 0 left, sh: 1 left
	if _, got := g.ask(0, desc("a=1"), desc("sh=1")); got != "OVER_LIMIT OVER_LIMIT/0 OK/0" {
		t.Fatalf("refused by a: %s", got)
	}
	if _, got := g.ask(0, desc("sh=1")); got != "OK OK/0" {
		t.Fatalf("sh charged by a refused request: %s", got)
	}
}

func TestGlobalShadow(t *testing.T) {
	a := perMinute("a", "a", 1)
	g := newRig(t, table{"d|a=1": {a, "ka"}}, rls.Config{Shadow: true})
	g.ask(0, desc("a=1"))
	resp, got := g.ask(0, desc("a=1"))
	if got != "OK OVER_LIMIT/0" { // the status says what enforcing would
		t.Fatalf("global shadow: %s", got)
	}
	for _, h := range resp.GetResponseHeadersToAdd() {
		if h.GetKey() == "Retry-After" {
			t.Fatal("Retry-After in shadow mode")
		}
	}
	if e := g.seen[len(g.seen)-1]; e.Outcome != core.OutcomeDenied || !e.Admitted || !e.Shadow {
		t.Fatalf("observed %+v", e)
	}
}

func TestCost(t *testing.T) {
	a := perMinute("a", "a", 10)
	g := newRig(t, table{"d|a=1": {a, "ka"}, "d|a=2": {a, "ka"}}, rls.Config{})
	if _, got := g.ask(3, desc("a=1")); got != "OK OK/7" {
		t.Fatalf("hits_addend 3: %s", got)
	}
	d := desc("a=1")
	d.HitsAddend = wrapperspb.UInt64(2)
	if _, got := g.ask(3, d); got != "OK OK/5" {
		t.Fatalf("descriptor's hits_addend 2 over the request's 3: %s", got)
	}
	d.HitsAddend = wrapperspb.UInt64(0)
	if _, got := g.ask(0, d); got != "OK OK/5" { // a check: nothing charged
		t.Fatalf("hits_addend 0: %s", got)
	}
	back := desc("a=2")
	back.IsNegativeHits = true
	back.HitsAddend = wrapperspb.UInt64(4)
	if _, got := g.ask(0, back); got != "OK OK/0" {
		t.Fatalf("negative hits: %s", got)
	}
	if _, got := g.ask(0, desc("a=1")); got != "OK OK/8" {
		t.Fatalf("after 4 given back: %s", got)
	}
	huge := desc("a=1")
	huge.HitsAddend = wrapperspb.UInt64(1 << 40)
	if _, got := g.ask(0, huge); got != "OVER_LIMIT OVER_LIMIT/0" {
		t.Fatalf("a cost no limit admits: %s", got)
	}
	if _, got := g.ask(0, desc("a=1")); got != "OK OK/7" {
		t.Fatalf("after a refused huge cost: %s", got)
	}
}

func TestFailureModes(t *testing.T) {
	down := rls.Store(func([]core.Limit) (core.Limiter, error) {
		return coretest.StoreDown(errors.New("connection refused")), nil
	})
	a := perMinute("a", "a", 1)
	for _, c := range []struct {
		mode core.FailureMode
		want string
	}{{core.FailClosed, "OVER_LIMIT OVER_LIMIT/0"}, {core.FailOpen, "OK OK/0"}} {
		g := newRig(t, table{"d|a=1": {a, "ka"}}, rls.Config{Store: down, Failure: c.mode})
		if _, got := g.ask(0, desc("a=1")); got != c.want {
			t.Fatalf("%v: %s, want %s", c.mode, got, c.want)
		}
		if e := g.seen[0]; e.Outcome != core.OutcomeStoreError || e.Err == nil {
			t.Fatalf("%v: observed %+v", c.mode, e)
		}
	}
}

func TestHeaders(t *testing.T) {
	a, b := perMinute("a", "a", 5), perMinute("b", "b", 2)
	g := newRig(t, table{"d|a=1": {a, "ka"}, "d|b=1": {b, "kb"}}, rls.Config{})
	header := func(resp *rlsv3.RateLimitResponse) string {
		var parts []string
		for _, h := range resp.GetResponseHeadersToAdd() {
			parts = append(parts, h.GetKey()+": "+h.GetValue())
		}
		return strings.Join(parts, "\n")
	}
	resp, _ := g.ask(0, desc("a=1"), desc("b=1"))
	// The descriptor with the least left speaks: b.
	want := "Ratelimit: \"b\";r=1;t=60\nRatelimit-Policy: \"b\";q=2;w=60\nX-Ratelimit-Limit: 2\nX-Ratelimit-Remaining: 1\nX-Ratelimit-Reset: 60"
	if got := header(resp); got != want {
		t.Fatalf("admitted:\n%s\nwant\n%s", got, want)
	}
	g.ask(0, desc("b=1"))
	g.clock.Advance(20 * time.Second)
	resp, _ = g.ask(0, desc("a=1"), desc("b=1"))
	want = "Ratelimit: \"b\";r=0;t=40\nRatelimit-Policy: \"b\";q=2;w=60\nRetry-After: 40\nX-Ratelimit-Limit: 2\nX-Ratelimit-Remaining: 0\nX-Ratelimit-Reset: 40"
	if got := header(resp); got != want {
		t.Fatalf("refused:\n%s\nwant\n%s", got, want)
	}
}

func TestRequestErrors(t *testing.T) {
	svc, err := rls.New(rls.Config{Store: rls.Memory()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := svc.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*rlcommon.RateLimitDescriptor{desc("a=1")}}); status.Code(err) != codes.Unavailable {
		t.Fatalf("no configuration: %v", err)
	}
	if err := svc.SetRules(table{}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Descriptors: []*rlcommon.RateLimitDescriptor{desc("a=1")}}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("no domain: %v", err)
	}
	if _, err := svc.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "d"}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("no descriptor: %v", err)
	}
	if _, err := rls.New(rls.Config{}); err == nil {
		t.Fatal("a Service without a store")
	}
}

func TestSetRules(t *testing.T) {
	a := perMinute("a", "a", 2)
	g := newRig(t, table{"d|a=1": {a, "ka"}}, rls.Config{})
	g.ask(0, desc("a=1"))
	// A reload with the same rule keeps its state.
	same := perMinute("a", "a", 2)
	if err := g.svc.SetRules(table{"d|a=1": {same, "ka"}}, []*rls.Rule{same}); err != nil {
		t.Fatal(err)
	}
	if _, got := g.ask(0, desc("a=1")); got != "OK OK/0" {
		t.Fatalf("same rule after a reload: %s", got)
	}
	// A changed limit starts afresh.
	more := perMinute("a", "a", 3)
	if err := g.svc.SetRules(table{"d|a=1": {more, "ka"}}, []*rls.Rule{more}); err != nil {
		t.Fatal(err)
	}
	if _, got := g.ask(0, desc("a=1")); got != "OK OK/2" {
		t.Fatalf("changed rule after a reload: %s", got)
	}
	bad := []*rls.Rule{
		{Name: "no id", Limits: []core.Limit{core.PerSecond(1)}},
		{ID: "none"},
		{ID: "both", Unlimited: true, Limits: []core.Limit{core.PerSecond(1)}},
		{ID: "shaper", Limits: []core.Limit{core.PerSecond(1).WithAlgorithm(core.LeakyBucket)}},
		{ID: "zero", Limits: []core.Limit{{}}},
	}
	for _, r := range bad {
		if err := g.svc.SetRules(table{}, []*rls.Rule{r}); err == nil {
			t.Fatalf("rule %+v accepted", r)
		}
	}
	// The configuration in place stays.
	if _, got := g.ask(0, desc("a=1")); got != "OK OK/1" {
		t.Fatalf("after refused reloads: %s", got)
	}
}

// TestExactAdmission: many goroutines on a frozen clock, two descriptors
// each request: exactly the smaller limit is admitted, and each limit is
// charged exactly that many times.
func TestExactAdmission(t *testing.T) {
	a, b := perMinute("a", "a", 300), perMinute("b", "b", 100)
	g := newRig(t, table{"d|a=1": {a, "ka"}, "d|b=1": {b, "kb"}, "d|a=2": {a, "ka"}}, rls.Config{})
	var ok atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				resp, err := g.svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*rlcommon.RateLimitDescriptor{desc("a=1"), desc("b=1")}})
				if err != nil {
					t.Error(err)
					return
				}
				if resp.GetOverallCode() == rlsv3.RateLimitResponse_OK {
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 100 {
		t.Fatalf("%d admitted, want 100", ok.Load())
	}
	// a was charged exactly 100: 200 of its 300 are left.
	resp, _ := g.ask(0, desc("a=2"))
	if got := resp.GetStatuses()[0].GetLimitRemaining(); got != 199 {
		t.Fatalf("a has %d left after one more, want 199", got)
	}
}

func TestDenyAllAndQuota(t *testing.T) {
	deny := &rls.Rule{ID: "deny", Name: "deny", DenyAll: true, Unit: rlsv3.RateLimitResponse_RateLimit_SECOND}
	q1, q2 := perMinute("q1", "q1", 1), perMinute("q2", "q2", 2)
	q1.Quota, q2.Quota = true, true
	a := perMinute("a", "a", 10)
	g := newRig(t, table{"d|deny=1": {deny, "kd"}, "d|q1=1": {q1, "k1"}, "d|q2=1": {q2, "k2"}, "d|a=1": {a, "ka"}}, rls.Config{})
	// A rule refusing all refuses the request as it stands: a is neither
	// asked (its status has its limit, and no count) nor charged.
	resp, got := g.ask(0, desc("deny=1"), desc("a=1"))
	if got != "OVER_LIMIT OVER_LIMIT/0 OK/0" || resp.GetStatuses()[0].GetCurrentLimit().GetRequestsPerUnit() != 0 ||
		resp.GetStatuses()[1].GetCurrentLimit().GetRequestsPerUnit() != 10 || resp.GetStatuses()[1].GetDurationUntilReset() != nil {
		t.Fatalf("deny all: %s %v", got, resp.GetStatuses())
	}
	if e := g.seen[len(g.seen)-1]; len(g.seen) != 1 || e.Key != "kd" || e.Outcome != core.OutcomeDenied {
		t.Fatalf("deny all observed %+v, want the deny-all descriptor's refusal alone", g.seen)
	}
	// Quota rules refuse the request only when all of them refuse.
	steps := []string{
		"OK OK/0 OK/1 OK/9",
		"OK OVER_LIMIT/0 OK/0 OK/8", // q1 is out, q2 still admits: q1 not charged
		"OVER_LIMIT OVER_LIMIT/0 OVER_LIMIT/0 OK/8",
	}
	for i, want := range steps {
		if _, got := g.ask(0, desc("q1=1"), desc("q2=1"), desc("a=1")); got != want {
			t.Fatalf("quota step %d: %s, want %s", i, got, want)
		}
	}
}
