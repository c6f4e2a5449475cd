package debugpage_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/debugpage"
	"github.com/floodgate/floodgate/overload"
)

// benchKeys returns n distinct keys shaped like IPv4 client keys, and
// checks that they are distinct (a benchmark over "many keys" that uses
// one measures nothing of the sketch's takeovers).
func benchKeys(b *testing.B, n int) []string {
	keys := make([]string, n)
	seen := make(map[string]bool, n)
	for i := range keys {
		keys[i] = "10." + strconv.Itoa(i>>16&255) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255)
		seen[keys[i]] = true
	}
	if len(seen) != n {
		b.Fatalf("%d distinct keys of %d", len(seen), n)
	}
	return keys
}

// BenchmarkObserve is the cost on the request path: parallel requests over
// 1<<16 distinct keys, a quarter of them denied, so the hot-keys sketch
// takes counters over on nearly every call and the refused-keys sketch on
// every denial.
func BenchmarkObserve(b *testing.B) {
	observeKeys(b, context.Background(), func(i uint64) core.Outcome {
		if i&3 == 0 {
			return core.OutcomeDenied
		}
		return core.OutcomeAllowed
	})
}

// observeKeys observes, from every goroutine, requests over 1<<16
// distinct keys in turn, the outcome of the i-th given by outcome.
func observeKeys(b *testing.B, ctx context.Context, outcome func(i uint64) core.Outcome) {
	keys := benchKeys(b, 1<<16)
	p := debugpage.MustNew()
	var next atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := next.Add(1) * 7919
		for pb.Next() {
			i++
			p.Observe(ctx, core.Event{Transport: "http", Outcome: outcome(i), Key: keys[i&(1<<16-1)], Cost: 1})
		}
	})
}

// BenchmarkObserveOneKey is one key hammered from every goroutine, as in
// an attack by one client: every call takes the same shard's lock.
func BenchmarkObserveOneKey(b *testing.B) {
	p := debugpage.MustNew()
	ctx := context.Background()
	e := core.Event{Transport: "http", Outcome: core.OutcomeDenied, Key: "203.0.113.9", Cost: 1}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p.Observe(ctx, e)
		}
	})
}

// BenchmarkObserveShed is sheds of a Sheddable request over 1<<16 keys,
// as while an overload guard sheds: the priority is read from the
// context and counted.
func BenchmarkObserveShed(b *testing.B) {
	observeKeys(b, overload.NewContext(context.Background(), overload.Sheddable),
		func(uint64) core.Outcome { return core.OutcomeShed })
}

// BenchmarkSnapshot is the cost of serving the JSON once (off the request
// path, once a second per open page), with full sketches.
func BenchmarkSnapshot(b *testing.B) {
	keys := benchKeys(b, 1<<16)
	p := debugpage.MustNew()
	ctx := context.Background()
	for i, k := range keys {
		o := core.OutcomeAllowed
		if i&3 == 0 {
			o = core.OutcomeDenied
		}
		p.Observe(ctx, core.Event{Outcome: o, Key: k})
	}
	req := httptest.NewRequest(http.MethodGet, "/debug/floodgate/?format=json", nil)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w := httptest.NewRecorder()
		p.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}
