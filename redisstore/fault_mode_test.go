package redisstore_test

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// TestFaultFailOpen: under load with FailOpen, Redis killed and restarted:
// no 5xx; while it is down every request is admitted without a decision,
// reported as a store error failed open, quickly; a key refused before the
// outage is still refused, from the deny cache; within 5 s of the restart
// Redis refuses a drained key again.
func TestFaultFailOpen(t *testing.T) {
	redistest.SkipShort(t, "Redis killed under load, and seconds waiting for it in real time")
	t.Parallel()
	runAs(t, realTime)
	srv := redistest.Start(t)
	c := faultClient(t, srv.Addr())
	lim := redisstore.MustNew(c, faultLimit, redisstore.WithTimeout(faultTimeout))
	r := serve(t, lim, core.FailOpen)
	before, ok := r.drain("drained-before")
	if !ok {
		t.Fatalf("key not refused after %d requests: %v", faultLimit.EffectiveBurst()+1, before)
	}
	var cached sample
	samples := outage(t, r, srv,
		func() { cached = r.get("drained-before") },
		func() bool { _, ok := r.drain("drained-after"); return ok })

	checkNoServerErrors(t, samples)
	if cached.status != http.StatusTooManyRequests || cached.outcome != "denied" || !cached.decided {
		t.Errorf("a key refused before the outage, asked while Redis is down: %v; want a 429 from the deny cache", cached)
	}
	down := during(samples, phaseDown)
	for _, s := range down {
		if s.status != http.StatusOK || s.outcome != "store_error/admitted" || s.decided {
			t.Fatalf("while Redis is down: %v; want 200, failed open, no rate-limit headers", s)
		}
	}
	checkLatency(t, "while down", down)
	checkUp(t, during(samples, phaseUp), "store_error/admitted")
	if got := r.obs.failedOpen.Load(); got < int64(len(down)) {
		t.Errorf("observer heard of %d store errors failed open, fewer than the %d requests while down", got, len(down))
	}
	if n, m := r.obs.refused.Load(), r.obs.otherFailureReported.Load(); n != 0 || m != 0 {
		t.Errorf("observer: %d store errors refused, %d under another mode; want 0 under FailOpen", n, m)
	}
	checkTTLs(t, c)
}

// TestFaultFailClosed: under load with FailClosed, Redis killed and
// restarted: no 5xx; while it is down every request is refused with 429
// and Retry-After, a whole number of seconds >= 1, as is every refusal of
// the run; within 5 s of the restart Redis admits again (under
// FailClosed, a 200 is a decision of Redis).
func TestFaultFailClosed(t *testing.T) {
	redistest.SkipShort(t, "Redis killed under load, and seconds waiting for it in real time")
	t.Parallel()
	runAs(t, realTime)
	srv := redistest.Start(t)
	c := faultClient(t, srv.Addr())
	lim := redisstore.MustNew(c, faultLimit, redisstore.WithTimeout(faultTimeout))
	r := serve(t, lim, core.FailClosed)
	n := 0
	samples := outage(t, r, srv, func() {}, func() bool {
		n++
		s := r.get(fmt.Sprintf("after-%d", n))
		return s.status == http.StatusOK && s.decided
	})

	checkNoServerErrors(t, samples)
	down := during(samples, phaseDown)
	for _, s := range down {
		if s.status != http.StatusTooManyRequests || s.outcome != "store_error/refused" || s.decided {
			t.Fatalf("while Redis is down: %v; want 429, a store error refused, no rate-limit headers", s)
		}
	}
	checkLatency(t, "while down", down)
	refusals := 0
	for _, s := range samples {
		if s.status != http.StatusTooManyRequests {
			continue
		}
		refusals++
		if secs, err := strconv.Atoi(s.retryAfter); err != nil || secs < 1 {
			t.Fatalf("refusal without a Retry-After of whole seconds >= 1: %v", s)
		}
	}
	if refusals < len(down) {
		t.Errorf("%d refusals, fewer than the %d requests while down", refusals, len(down))
	}
	checkUp(t, during(samples, phaseUp), "store_error/refused")
	if got := r.obs.refused.Load(); got < int64(len(down)) {
		t.Errorf("observer heard of %d store errors refused, fewer than the %d requests while down", got, len(down))
	}
	if n, m := r.obs.failedOpen.Load(), r.obs.otherFailureReported.Load(); n != 0 || m != 0 {
		t.Errorf("observer: %d store errors admitted, %d under another mode; want 0 under FailClosed", n, m)
	}
	checkTTLs(t, c)
}
