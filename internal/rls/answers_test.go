package rls_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/rls"
	"github.com/floodgate/floodgate/internal/rlsconfig"
)

// check is a descriptor of "k=v" entries with hits_addend 0.
func check(kvs ...string) *rlcommon.RateLimitDescriptor {
	d := desc(kvs...)
	d.HitsAddend = wrapperspb.UInt64(0)
	return d
}

// TestCheckWithoutCharge: a descriptor with hits_addend 0 is a check: it
// reports what is left and the reset, is never charged, and is over the
// limit once nothing is left (and then refuses the request, all or
// nothing); alone or with the Multi.
func TestCheckWithoutCharge(t *testing.T) {
	for _, multi := range []bool{false, true} {
		t.Run(fmt.Sprint("multi=", multi), func(t *testing.T) {
			a, b := perMinute("a", "a", 5), perMinute("b", "b", 3)
			tb := table{"d|a=1": {a, "ka"}, "d|b=1": {b, "kb"}}
			g := newRig(t, tb, rls.Config{})
			var m *memMulti
			if multi {
				g, m = newMultiRig(t, tb, rls.Config{})
			}
			steps := []struct {
				ds   []*rlcommon.RateLimitDescriptor
				want string
			}{
				{[]*rlcommon.RateLimitDescriptor{check("a=1")}, "OK OK/5"},
				{[]*rlcommon.RateLimitDescriptor{desc("a=1"), desc("a=1"), desc("a=1")}, "OK OK/4 OK/3 OK/2"},
				{[]*rlcommon.RateLimitDescriptor{check("a=1"), desc("b=1")}, "OK OK/2 OK/2"},
				{[]*rlcommon.RateLimitDescriptor{check("a=1")}, "OK OK/2"},
				{[]*rlcommon.RateLimitDescriptor{desc("a=1"), desc("a=1")}, "OK OK/1 OK/0"},
				// Nothing left: the check is over the limit, and the
				// request is refused: b is not charged.
				{[]*rlcommon.RateLimitDescriptor{check("a=1"), desc("b=1")}, "OVER_LIMIT OVER_LIMIT/0 OK/2"},
				{[]*rlcommon.RateLimitDescriptor{desc("b=1")}, "OK OK/1"},
			}
			for i, s := range steps {
				resp, got := g.ask(0, s.ds...)
				if got != s.want {
					t.Fatalf("step %d: %s, want %s", i, got, s.want)
				}
				if r := resp.GetStatuses()[0].GetDurationUntilReset(); r.GetSeconds() != 60 || r.GetNanos() != 0 {
					t.Fatalf("step %d: reset %v, want 60 s", i, r)
				}
			}
			if multi && (m.one != 0 || m.refunds == 0) {
				t.Fatalf("the Multi made %d refunds and the limiters %d calls, want some and none", m.refunds, m.one)
			}
		})
	}
}

// TestGlobalQuota: under Config.Quota every rule is in quota mode: a
// request is refused only when all its descriptors are over their limits,
// and a descriptor no rule matches counts as one within its limit, as
// envoyproxy/ratelimit's QUOTA_MODE counts it.
func TestGlobalQuota(t *testing.T) {
	a, b := perMinute("a", "a", 1), perMinute("b", "b", 2)
	g := newRig(t, table{"d|a=1": {a, "ka"}, "d|b=1": {b, "kb"}}, rls.Config{Quota: true})
	for i, want := range []string{
		"OK OK/0 OK/1",
		"OK OVER_LIMIT/0 OK/0", // a is out, b still admits
		"OVER_LIMIT OVER_LIMIT/0 OVER_LIMIT/0",
	} {
		if _, got := g.ask(0, desc("a=1"), desc("b=1")); got != want {
			t.Fatalf("step %d: %s, want %s", i, got, want)
		}
	}
	if _, got := g.ask(0, desc("a=1"), desc("b=1"), desc("zzz=1")); got != "OK OVER_LIMIT/0 OVER_LIMIT/0 OK/0" {
		t.Fatalf("with a descriptor no rule matches: %s", got)
	}
	g = newRig(t, table{"d|a=1": {a, "ka"}}, rls.Config{})
	g.ask(0, desc("a=1"))
	if _, got := g.ask(0, desc("a=1"), desc("zzz=1")); got != "OVER_LIMIT OVER_LIMIT/0 OK/0" {
		t.Fatalf("without global quota mode: %s", got)
	}
}

// TestResetWholeSeconds: duration_until_reset is whole seconds, rounded
// up (the window's end is never earlier than it says), as upstream's
// seconds until the window ends.
func TestResetWholeSeconds(t *testing.T) {
	a := perMinute("a", "a", 5)
	for _, c := range []struct {
		at   time.Duration // into the minute
		want int64
	}{{0, 60}, {10 * time.Second, 50}, {10*time.Second + 300*time.Millisecond, 50}, {59*time.Second + time.Nanosecond, 1}} {
		g := newRig(t, table{"d|a=1": {a, "ka"}}, rls.Config{})
		g.clock.Advance(c.at)
		resp, _ := g.ask(0, desc("a=1"))
		if r := resp.GetStatuses()[0].GetDurationUntilReset(); r.GetSeconds() != c.want || r.GetNanos() != 0 {
			t.Fatalf("%v into the minute: %v, want %d s", c.at, r, c.want)
		}
	}
}

func headerText(resp *rlsv3.RateLimitResponse) string {
	var parts []string
	for _, h := range resp.GetResponseHeadersToAdd() {
		parts = append(parts, h.GetKey()+": "+h.GetValue())
	}
	return strings.Join(parts, "\n")
}

// TestHeadersNone: core.HeadersNone sends no header field at all, not
// even Retry-After on a refusal (upstream's default sends none).
func TestHeadersNone(t *testing.T) {
	a := perMinute("a", "a", 1)
	g := newRig(t, table{"d|a=1": {a, "ka"}}, rls.Config{Headers: core.HeadersNone})
	g.ask(0, desc("a=1"))
	resp, got := g.ask(0, desc("a=1"))
	if got != "OVER_LIMIT OVER_LIMIT/0" || len(resp.GetResponseHeadersToAdd()) != 0 {
		t.Fatalf("%s with %q", got, headerText(resp))
	}
}

// TestUpstreamHeaders: envoyproxy/ratelimit's three fields, from the last
// descriptor over its limit not in quota mode, else the first with the
// least left; next to floodgate's, or alone.
func TestUpstreamHeaders(t *testing.T) {
	a, b, c := perMinute("a", "a", 5), perMinute("b", "b", 3), perMinute("c", "c", 1)
	q := perMinute("q", "q", 1)
	q.Quota = true
	hour := &rls.Rule{ID: "h", Name: "h", Limits: []core.Limit{core.PerHour(2).WithAlgorithm(core.FixedWindow).WithName("h")},
		RequestsPerUnit: 2, Unit: rlsv3.RateLimitResponse_RateLimit_HOUR}
	tb := table{"d|a=1": {a, "ka"}, "d|b=1": {b, "kb"}, "d|c=1": {c, "kc"}, "d|q=1": {q, "kq"}, "d|h=1": {hour, "kh"}}
	g := newRig(t, tb, rls.Config{Headers: core.HeadersNone, UpstreamHeaders: rls.UpstreamHeaderNames()})
	g.clock.Advance(15 * time.Second)
	resp, _ := g.ask(0, desc("a=1"), desc("b=1"), desc("zzz=1"))
	if got := headerText(resp); got != "RateLimit-Limit: 3\nRateLimit-Remaining: 2\nRateLimit-Reset: 45" {
		t.Fatalf("the least left:\n%s", got)
	}
	g.ask(0, desc("c=1"), desc("h=1"), desc("q=1"))
	// c and h are over their limits (h's is the last), q too, in quota
	// mode: h's fields, whose window is the hour.
	g.ask(0, desc("h=1"))
	resp, got := g.ask(0, desc("c=1"), desc("h=1"), desc("q=1"))
	if got != "OVER_LIMIT OVER_LIMIT/0 OVER_LIMIT/0 OVER_LIMIT/0" {
		t.Fatalf("codes: %s", got)
	}
	if got := headerText(resp); got != "RateLimit-Limit: 2\nRateLimit-Remaining: 0\nRateLimit-Reset: 3585" {
		t.Fatalf("over the limit:\n%s", got)
	}
	// With floodgate's fields, renamed.
	g = newRig(t, tb, rls.Config{Headers: core.HeadersLegacy, UpstreamHeaders: &rls.HeaderNames{Limit: "L", Remaining: "R", Reset: "T"}})
	resp, _ = g.ask(0, desc("b=1"))
	if got := headerText(resp); got != "X-Ratelimit-Limit: 3\nX-Ratelimit-Remaining: 2\nX-Ratelimit-Reset: 60\nL: 3\nR: 2\nT: 60" {
		t.Fatalf("both:\n%s", got)
	}
	for _, c := range []struct {
		h     *rls.HeaderNames
		style core.HeaderStyle
		want  string
	}{
		{&rls.HeaderNames{Limit: "", Remaining: "R", Reset: "T"}, core.HeadersNone, "UpstreamHeaders.Limit"},
		{&rls.HeaderNames{Limit: "L", Remaining: "R:x", Reset: "T"}, core.HeadersNone, "UpstreamHeaders.Remaining"},
		{&rls.HeaderNames{Limit: "L", Remaining: "R", Reset: "l"}, core.HeadersNone, `UpstreamHeaders.Reset "l" is the name of UpstreamHeaders.Limit`},
		{&rls.HeaderNames{Limit: "x-ratelimit-limit", Remaining: "R", Reset: "T"}, core.HeadersBoth, "X-Ratelimit-Limit, which Config.Headers sends"},
		{&rls.HeaderNames{Limit: "L", Remaining: "Retry-After", Reset: "T"}, core.HeadersIETF, "Retry-After"},
	} {
		_, err := rls.New(rls.Config{Store: rls.Memory(), Headers: c.style, UpstreamHeaders: c.h})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "rls: ") {
			t.Fatalf("%+v with %v: %v, want an error naming %s", c.h, c.style, err, c.want)
		}
	}
	if _, err := rls.New(rls.Config{Store: rls.Memory(), Headers: core.HeadersLegacy, UpstreamHeaders: rls.UpstreamHeaderNames()}); err != nil {
		t.Fatalf("upstream's names next to the legacy fields: %v", err)
	}
}

// TestNewErrors: settings New refuses, each with what to fix.
func TestNewErrors(t *testing.T) {
	for _, c := range []struct {
		c    rls.Config
		want string
	}{
		{rls.Config{Store: rls.Memory(), Charging: 9}, "Charging"},
		{rls.Config{Store: rls.Memory(), NearLimitRatio: -0.1}, "NearLimitRatio"},
		{rls.Config{Store: rls.Memory(), NearLimitRatio: 1.5}, "NearLimitRatio"},
		{rls.Config{Store: rls.Memory(), Headers: 9}, "Headers"},
	} {
		if _, err := rls.New(c.c); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%+v: %v, want an error naming %s", c.c, err, c.want)
		}
	}
}

// TestFailureRetryAfter: a request the failure mode refuses carries
// Retry-After: 1 (when header fields are on), as the middleware answers a
// store failure; failing open, or with no fields, it carries none.
func TestFailureRetryAfter(t *testing.T) {
	down := rls.Store(func([]core.Limit) (core.Limiter, error) {
		return coretest.StoreDown(errors.New("connection refused")), nil
	})
	a := perMinute("a", "a", 1)
	for _, c := range []struct {
		mode  core.FailureMode
		style core.HeaderStyle
		want  string
	}{
		{core.FailClosed, core.HeadersBoth, "Retry-After: 1"},
		{core.FailClosed, core.HeadersLegacy, "Retry-After: 1"},
		{core.FailClosed, core.HeadersNone, ""},
		{core.FailOpen, core.HeadersBoth, ""},
	} {
		g := newRig(t, table{"d|a=1": {a, "ka"}}, rls.Config{Store: down, Failure: c.mode, Headers: c.style})
		if resp, _ := g.ask(0, desc("a=1")); headerText(resp) != c.want {
			t.Fatalf("%v, %v: %q, want %q", c.mode, c.style, headerText(resp), c.want)
		}
	}
	// The same when the Multi's store fails.
	mg, m := newMultiRig(t, table{"d|a=1": {a, "ka"}}, rls.Config{})
	m.err = &core.StoreError{Op: "allow", Err: errors.New("connection refused")}
	if resp, got := mg.ask(0, desc("a=1")); got != "OVER_LIMIT OVER_LIMIT/0" || headerText(resp) != "Retry-After: 1" {
		t.Fatalf("the Multi failing: %s with %q", got, headerText(resp))
	}
	// FailCall fails the call instead.
	g := newRig(t, table{"d|a=1": {a, "ka"}}, rls.Config{Store: down, Failure: core.FailOpen, FailCall: true})
	_, err := g.svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*rlcommon.RateLimitDescriptor{desc("a=1")}})
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("FailCall: %v", err)
	}
}

// TestCharging: what a request's descriptors are charged under each way.
func TestCharging(t *testing.T) {
	steps := func(c rls.Charging) []string {
		switch c {
		case rls.ChargeAlways:
			return []string{"OK OK/1 OK/0", "OVER_LIMIT OK/0 OVER_LIMIT/0", "OVER_LIMIT OVER_LIMIT/0"}
		case rls.ChargeStopWhenOver:
			return []string{"OK OK/1 OK/0", "OVER_LIMIT OK/1 OVER_LIMIT/0", "OK OK/0"}
		}
		return []string{"OK OK/1 OK/0", "OVER_LIMIT OK/1 OVER_LIMIT/0", "OK OK/0"}
	}
	for _, c := range []rls.Charging{rls.ChargeAllOrNothing, rls.ChargeAlways, rls.ChargeStopWhenOver} {
		for _, multi := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/multi=%v", c, multi), func(t *testing.T) {
				a, b := perMinute("a", "a", 2), perMinute("b", "b", 1)
				tb := table{"d|a=1": {a, "ka"}, "d|b=1": {b, "kb"}}
				g := newRig(t, tb, rls.Config{Charging: c})
				if multi {
					g, _ = newMultiRig(t, tb, rls.Config{Charging: c})
				}
				want := steps(c)
				for i, ds := range [][]*rlcommon.RateLimitDescriptor{{desc("a=1"), desc("b=1")}, {desc("a=1"), desc("b=1")}, {desc("a=1")}} {
					if _, got := g.ask(0, ds...); got != want[i] {
						t.Fatalf("step %d: %s, want %s", i, got, want[i])
					}
				}
			})
		}
	}
}

// TestChargingPastTheLimit: upstream charges a refused descriptor past its
// limit, so what it had left is spent; all or nothing, it stays.
func TestChargingPastTheLimit(t *testing.T) {
	for _, c := range []struct {
		charging rls.Charging
		want     []string
	}{
		{rls.ChargeAllOrNothing, []string{"OK OK/2", "OVER_LIMIT OVER_LIMIT/2", "OVER_LIMIT OVER_LIMIT/0", "OK OK/2", "OK OK/1"}},
		{rls.ChargeAlways, []string{"OK OK/2", "OVER_LIMIT OVER_LIMIT/0", "OVER_LIMIT OVER_LIMIT/0", "OVER_LIMIT OVER_LIMIT/0", "OVER_LIMIT OVER_LIMIT/0"}},
		{rls.ChargeStopWhenOver, []string{"OK OK/2", "OVER_LIMIT OVER_LIMIT/0", "OVER_LIMIT OVER_LIMIT/0", "OVER_LIMIT OVER_LIMIT/0", "OVER_LIMIT OVER_LIMIT/0"}},
	} {
		for _, multi := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/multi=%v", c.charging, multi), func(t *testing.T) {
				a := perMinute("a", "a", 5)
				tb := table{"d|a=1": {a, "ka"}}
				g := newRig(t, tb, rls.Config{Charging: c.charging})
				if multi {
					g, _ = newMultiRig(t, tb, rls.Config{Charging: c.charging})
				}
				huge := desc("a=1")
				huge.HitsAddend = wrapperspb.UInt64(1 << 40)
				for i, s := range []struct {
					hits uint32
					d    *rlcommon.RateLimitDescriptor
				}{{3, desc("a=1")}, {3, desc("a=1")}, {0, huge}, {0, check("a=1")}, {1, desc("a=1")}} {
					if _, got := g.ask(s.hits, s.d); got != c.want[i] {
						t.Fatalf("step %d: %s, want %s", i, got, c.want[i])
					}
				}
			})
		}
	}
	// A cost more than the limit admits, under upstream's charging, spends
	// all there is too.
	a := perMinute("a", "a", 5)
	g := newRig(t, table{"d|a=1": {a, "ka"}}, rls.Config{Charging: rls.ChargeAlways})
	huge := desc("a=1")
	huge.HitsAddend = wrapperspb.UInt64(1 << 40)
	if _, got := g.ask(0, huge); got != "OVER_LIMIT OVER_LIMIT/0" {
		t.Fatalf("a huge cost: %s", got)
	}
	if _, got := g.ask(0, desc("a=1")); got != "OVER_LIMIT OVER_LIMIT/0" {
		t.Fatalf("after a huge cost: %s", got)
	}
}

// TestCheckPastTheLimit: under upstream's charging a check (hits_addend
// 0) is over the limit once the count is past the limit, as upstream's:
// at the limit it is OK, 0 left; a charge that takes the count past the
// limit is kept, also when another descriptor of the request refuses it
// (with a Multi: the call that refused charged nothing). All or nothing,
// a check is over once nothing is left.
func TestCheckPastTheLimit(t *testing.T) {
	a, b := perMinute("a", "a", 2), perMinute("b", "b", 3)
	tb := table{"d|a=1": {a, "ka"}, "d|b=1": {b, "kb"}}
	hit := func(n uint64, kv string) *rlcommon.RateLimitDescriptor {
		d := desc(kv)
		d.HitsAddend = wrapperspb.UInt64(n)
		return d
	}
	steps := [][]*rlcommon.RateLimitDescriptor{
		{check("a=1")}, {hit(2, "a=1")}, {check("a=1")}, // a at its limit
		{hit(3, "b=1")},                // b at its limit
		{hit(1, "a=1"), hit(2, "b=1")}, // a past its limit, b refuses
		{check("a=1")}, {check("b=1")},
	}
	for _, c := range []struct {
		charging rls.Charging
		want     []string
	}{
		{rls.ChargeAllOrNothing, []string{"OK OK/2", "OK OK/0", "OVER_LIMIT OVER_LIMIT/0", "OK OK/0",
			"OVER_LIMIT OVER_LIMIT/0 OVER_LIMIT/0", "OVER_LIMIT OVER_LIMIT/0", "OVER_LIMIT OVER_LIMIT/0"}},
		{rls.ChargeAlways, []string{"OK OK/2", "OK OK/0", "OK OK/0", "OK OK/0",
			"OVER_LIMIT OVER_LIMIT/0 OVER_LIMIT/0", "OVER_LIMIT OVER_LIMIT/0", "OVER_LIMIT OVER_LIMIT/0"}},
		{rls.ChargeStopWhenOver, []string{"OK OK/2", "OK OK/0", "OK OK/0", "OK OK/0",
			"OVER_LIMIT OVER_LIMIT/0 OVER_LIMIT/0", "OVER_LIMIT OVER_LIMIT/0", "OVER_LIMIT OVER_LIMIT/0"}},
	} {
		for _, multi := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/multi=%v", c.charging, multi), func(t *testing.T) {
				g := newRig(t, tb, rls.Config{Charging: c.charging})
				if multi {
					g, _ = newMultiRig(t, tb, rls.Config{Charging: c.charging})
				}
				for i, ds := range steps {
					if _, got := g.ask(0, ds...); got != c.want[i] {
						t.Fatalf("step %d: %s, want %s", i, got, c.want[i])
					}
				}
			})
		}
	}
}

// TestChargingModes: under upstream's charging, shadow and quota-mode
// descriptors are decided whatever the others say; under
// ChargeStopWhenOver one over its limit stops the charges of all the
// others, even of a request admitted (by quota mode).
func TestChargingModes(t *testing.T) {
	a, sh := perMinute("a", "a", 1), perMinute("s", "s", 5)
	sh.Shadow = true
	q1, q2 := perMinute("q1", "q1", 1), perMinute("q2", "q2", 5)
	q1.Quota, q2.Quota = true, true
	tb := table{"d|a=1": {a, "ka"}, "d|s=1": {sh, "ks"}, "d|q1=1": {q1, "k1"}, "d|q2=1": {q2, "k2"}}
	for _, c := range []struct {
		charging rls.Charging
		want     []string
	}{
		// All or nothing: the shadow descriptor of a refused request is
		// not decided (its status has no count: 0), and q2 is charged.
		{rls.ChargeAllOrNothing, []string{"OK OK/0 OK/4", "OVER_LIMIT OVER_LIMIT/0 OK/0", "OK OK/3", "OK OK/0 OK/4", "OK OVER_LIMIT/0 OK/3"}},
		{rls.ChargeAlways, []string{"OK OK/0 OK/4", "OVER_LIMIT OVER_LIMIT/0 OK/3", "OK OK/2", "OK OK/0 OK/4", "OK OVER_LIMIT/0 OK/3"}},
		{rls.ChargeStopWhenOver, []string{"OK OK/0 OK/4", "OVER_LIMIT OVER_LIMIT/0 OK/4", "OK OK/3", "OK OK/0 OK/4", "OK OVER_LIMIT/0 OK/4"}},
	} {
		t.Run(c.charging.String(), func(t *testing.T) {
			g := newRig(t, tb, rls.Config{Charging: c.charging})
			for i, ds := range [][]*rlcommon.RateLimitDescriptor{
				{desc("a=1"), desc("s=1")}, {desc("a=1"), desc("s=1")}, {desc("s=1")},
				{desc("q1=1"), desc("q2=1")}, {desc("q1=1"), desc("q2=1")},
			} {
				if _, got := g.ask(0, ds...); got != c.want[i] {
					t.Fatalf("step %d: %s, want %s", i, got, c.want[i])
				}
			}
		})
	}
}

// TestDynamicMetadata: the response's dynamic_metadata as
// envoyproxy/ratelimit builds it, from the configuration's metadata.
func TestDynamicMetadata(t *testing.T) {
	d, err := rlsconfig.Parse("m.yaml", []byte(`domain: m
descriptors:
  - key: a
    metadata: {team: {name: one, tags: [x, 1]}, tier: 2}
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: b
    metadata: {team: {name: two, owner: bob}, region: eu}
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: c
    metadata: {unused: true}
    rate_limit: {unlimited: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	conf, err := rlsconfig.Of([]*rlsconfig.Domain{d})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := rls.New(rls.Config{Store: rls.Memory(), DynamicMetadata: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.SetRules(rls.FromConfig(conf)); err != nil {
		t.Fatal(err)
	}
	over := desc("b=1")
	over.Limit = &rlcommon.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_HOUR}
	ask := func(hits uint32, ds ...*rlcommon.RateLimitDescriptor) *structpb.Struct {
		resp, err := svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "m", Descriptors: ds, HitsAddend: hits})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetDynamicMetadata()
	}
	want := func(m map[string]any) *structpb.Struct {
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	two := desc("b=2")
	two.HitsAddend = wrapperspb.UInt64(1)
	got := ask(0, desc("a=1"), two, desc("c=1"))
	exp := want(map[string]any{"domain": "m",
		"descriptors": []any{map[string]any{"entries": []any{"a=1"}}, map[string]any{"entries": []any{"b=2"}, "hitsAddend": 1}, map[string]any{"entries": []any{"c=1"}}},
		// The earlier descriptor's values stay; mappings merge; the
		// unlimited rule's is not there.
		"metadata": map[string]any{"team": map[string]any{"name": "one", "tags": []any{"x", 1}, "owner": "bob"}, "tier": 2, "region": "eu"}})
	if !proto.Equal(got, exp) {
		t.Fatalf("got %v\nwant %v", got, exp)
	}
	// b=2 is over its limit now: its metadata is not there; the rule's own
	// metadata was not changed by the merge.
	got = ask(3, desc("a=1"), desc("b=2"))
	exp = want(map[string]any{"domain": "m", "hitsAddend": 3,
		"descriptors": []any{map[string]any{"entries": []any{"a=1"}}, map[string]any{"entries": []any{"b=2"}}},
		"metadata":    map[string]any{"team": map[string]any{"name": "one", "tags": []any{"x", 1}}, "tier": 2}})
	if !proto.Equal(got, exp) {
		t.Fatalf("got %v\nwant %v", got, exp)
	}
	// A limit override: its text, and no metadata (upstream gives
	// overrides none).
	got = ask(0, over)
	exp = want(map[string]any{"domain": "m", "descriptors": []any{map[string]any{"entries": []any{"b=1"}, "limit": over.GetLimit().String()}}})
	if !proto.Equal(got, exp) {
		t.Fatalf("got %v\nwant %v", got, exp)
	}
	// Without the setting, none.
	g := newRig(t, table{}, rls.Config{})
	if resp, _ := g.ask(0, desc("a=1")); resp.GetDynamicMetadata() != nil {
		t.Fatal("dynamic metadata without Config.DynamicMetadata")
	}
}

// TestOverridesDropped: overrides past the 256 a configuration keeps are
// matched as if absent, and counted and logged (the first, then every
// power of two).
func TestOverridesDropped(t *testing.T) {
	d, err := rlsconfig.Parse("web.yaml", []byte("domain: web\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 100}\n"))
	if err != nil {
		t.Fatal(err)
	}
	conf, err := rlsconfig.Of([]*rlsconfig.Domain{d})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	svc, err := rls.New(rls.Config{Store: rls.Memory(), Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.SetRules(rls.FromConfig(conf)); err != nil {
		t.Fatal(err)
	}
	ask := func(rpu uint32) string {
		x := desc("user=bob")
		x.Limit = &rlcommon.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: rpu, Unit: typev3.RateLimitUnit_MINUTE}
		resp, err := svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "web", Descriptors: []*rlcommon.RateLimitDescriptor{x}})
		if err != nil {
			t.Fatal(err)
		}
		l := resp.GetStatuses()[0].GetCurrentLimit()
		return fmt.Sprintf("%d/%s", l.GetRequestsPerUnit(), l.GetUnit())
	}
	for rpu := uint32(1); rpu <= 256; rpu++ {
		if got := ask(rpu); got != fmt.Sprintf("%d/MINUTE", rpu) {
			t.Fatalf("override %d: %s", rpu, got)
		}
	}
	if svc.DroppedOverrides() != 0 || log.Len() != 0 {
		t.Fatalf("%d dropped, log %q, before the maximum", svc.DroppedOverrides(), log.String())
	}
	for i := range 3 {
		if got := ask(1000 + uint32(i)); got != "100/HOUR" {
			t.Fatalf("override past the maximum: %s, want the configured rule", got)
		}
	}
	if got := ask(7); got != "7/MINUTE" {
		t.Fatalf("an override kept: %s", got)
	}
	if n, lines := svc.DroppedOverrides(), strings.Count(log.String(), "limit override is ignored"); n != 3 || lines != 2 {
		t.Fatalf("%d dropped and %d lines logged, want 3 and 2:\n%s", n, lines, log.String())
	}
	if !strings.Contains(log.String(), "domain=web requests_per_unit=1000 unit=minute ignored=1") {
		t.Fatalf("log: %s", log.String())
	}
}

// TestStats: the per-rule counters under a near-limit ratio of 0.5, the
// keys upstream forms (detailed_metric, value_to_metric, an override's),
// and the descriptors counted (not unlimited, not replaced).
func TestStats(t *testing.T) {
	d, err := rlsconfig.Parse("s.yaml", []byte(`domain: s
descriptors:
  - key: plain
    rate_limit: {unit: minute, requests_per_unit: 4}
  - key: detail
    detailed_metric: true
    rate_limit: {unit: minute, requests_per_unit: 4}
  - key: valued
    value_to_metric: true
    rate_limit: {unit: minute, requests_per_unit: 4}
  - key: free
    rate_limit: {unlimited: true}
  - key: old
    rate_limit: {unit: minute, requests_per_unit: 4, name: old}
  - key: new
    rate_limit: {unit: minute, requests_per_unit: 4, replaces: [{name: old}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	conf, err := rlsconfig.Of([]*rlsconfig.Domain{d})
	if err != nil {
		t.Fatal(err)
	}
	rec := &statsRecorder{}
	clock := coretest.NewClock(time.Unix(1_800_000_000, 0))
	svc, err := rls.New(rls.Config{Store: rls.Memory(core.WithClock(clock)), Stats: rec, NearLimitRatio: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.SetRules(rls.FromConfig(conf)); err != nil {
		t.Fatal(err)
	}
	ask := func(hits uint32, ds ...*rlcommon.RateLimitDescriptor) {
		if _, err := svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "s", Descriptors: ds, HitsAddend: hits}); err != nil {
			t.Fatal(err)
		}
	}
	ask(1, desc("plain=x"))
	ask(2, desc("plain=x")) // 1 -> 3: threshold 2, one hit near
	ask(2, desc("plain=x")) // 3 + 2 > 4: one over, one near (3 -> 4)
	ask(1, desc("detail=v1"), desc("valued=v2"), desc("free=1"), desc("old=1"), desc("new=1"))
	over := desc("k=v", "k2=")
	over.Limit = &rlcommon.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_MINUTE}
	ask(1, over)
	ask(1, over)
	for key, want := range map[string]rls.Counts{
		"s.plain":        {TotalHits: 5, WithinLimit: 3, NearLimit: 2, OverLimit: 1},
		"s.detail_v1":    {TotalHits: 1, WithinLimit: 1},
		"s.valued_v2":    {TotalHits: 1, WithinLimit: 1},
		"s.new":          {TotalHits: 1, WithinLimit: 1},
		"s.k_v.k2":       {TotalHits: 2, WithinLimit: 1, NearLimit: 1, OverLimit: 1},
		"s.free":         {},
		"s.old":          {},
		"s.detail":       {},
		"s.valued":       {},
		"s.plain_x":      {},
		"override\x001/": {},
	} {
		got, ok := rec.get(key)
		if got != want || ok != (want != rls.Counts{}) {
			t.Errorf("%q: %+v (%v), want %+v", key, got, ok, want)
		}
	}
}

// TestQuotaHitsGivenBack: a descriptor giving hits back is no decision:
// it does not count among the quota-mode descriptors that admit.
func TestQuotaHitsGivenBack(t *testing.T) {
	q1, q2 := perMinute("q1", "q1", 1), perMinute("q2", "q2", 5)
	q1.Quota, q2.Quota = true, true
	g := newRig(t, table{"d|q1=1": {q1, "k1"}, "d|q2=1": {q2, "k2"}}, rls.Config{})
	g.ask(0, desc("q1=1"))
	back := desc("q2=1")
	back.IsNegativeHits = true
	if _, got := g.ask(0, desc("q1=1"), back); got != "OVER_LIMIT OVER_LIMIT/0 OK/0" {
		t.Fatalf("%s, want the request refused by q1, the only quota-mode decision", got)
	}
}
