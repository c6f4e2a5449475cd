package httpmw_test

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
)

// refCeil is ceil(d) in seconds, computed differently from the package (in
// unsigned arithmetic, which cannot overflow here), 0 for d <= 0.
func refCeil(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((uint64(d) + uint64(time.Second) - 1) / uint64(time.Second))
}

// parseSFName reads a Structured Field String at the start of v and returns
// it and the rest of v.
func parseSFName(t *testing.T, v string) (string, string) {
	t.Helper()
	if !strings.HasPrefix(v, `"`) {
		t.Fatalf("%q does not start with a String", v)
	}
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\':
			i++
			if i == len(v) || (v[i] != '"' && v[i] != '\\') {
				t.Fatalf("%q: bad escape", v)
			}
			b.WriteByte(v[i])
		case c == '"':
			return b.String(), v[i+1:]
		case c < 0x20 || c > 0x7e:
			t.Fatalf("%q: byte %#x not allowed in a String", v, c)
		default:
			b.WriteByte(c)
		}
	}
	t.Fatalf("%q: unterminated String", v)
	return "", ""
}

// params reads ";k=int" parameters.
func params(t *testing.T, s string) map[string]int64 {
	t.Helper()
	m := map[string]int64{}
	for _, kv := range strings.Split(strings.TrimPrefix(s, ";"), ";") {
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil || n < 0 {
			t.Fatalf("parameter %q of %q is not a non-negative integer", kv, s)
		}
		m[k] = n
	}
	return m
}

func intHeader(t *testing.T, h http.Header, name string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(h.Get(name), 10, 64)
	if err != nil || n < 0 {
		t.Fatalf("%s: %q is not a non-negative integer", name, h.Get(name))
	}
	return n
}

// clean is s as a Structured Field String can carry it: every byte outside
// printable ASCII becomes '_'.
func clean(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '_'
		}
	}
	return string(b)
}

// quotedLen is the length of s as a Structured Field String: quotes, and
// '"' and '\' escaped.
func quotedLen(s string) int {
	return 2 + len(s) + strings.Count(s, `"`) + strings.Count(s, `\`)
}

// checkHeaders checks the rate-limit headers h that a Limiter in style
// wrote for d against the documented formulas, whatever d holds: every
// number present, parseable and exact; Retry-After >= 1 on a denial, and
// the denial's t never after it; RateLimit and RateLimit-Policy naming the
// policy alike with a valid String, a core name untouched and any other
// cut (never dropped) to a bounded length; no value with a byte outside
// printable ASCII (no CTL, so no header injection).
func checkHeaders(t *testing.T, h http.Header, d core.Decision, st core.HeaderStyle) {
	t.Helper()
	for k, vs := range h {
		for _, v := range vs {
			for i := 0; i < len(v); i++ {
				if v[i] < 0x20 || v[i] > 0x7e {
					t.Fatalf("%s: %q has byte %#x", k, v, v[i])
				}
			}
		}
	}
	allowed := d.Allowed
	wantRem := max(int64(d.Remaining), 0)
	wantT := refCeil(d.ResetAfter)
	if !allowed {
		wantT = refCeil(d.RetryAfter)
	}
	var ra int64
	if allowed {
		if h.Get("Retry-After") != "" {
			t.Fatal("Retry-After on an allowed decision")
		}
	} else {
		ra = intHeader(t, h, "Retry-After")
		if ra < 1 || ra != max(refCeil(d.RetryAfter), 1) {
			t.Fatalf("Retry-After %d for RetryAfter %v", ra, d.RetryAfter)
		}
	}
	events := max(int64(d.Limit.Events), 0)
	if st == core.HeadersBoth || st == core.HeadersLegacy {
		if g := intHeader(t, h, "X-RateLimit-Limit"); g != events {
			t.Errorf("X-RateLimit-Limit %d, events %d", g, d.Limit.Events)
		}
		if g := intHeader(t, h, "X-RateLimit-Remaining"); g != wantRem {
			t.Errorf("X-RateLimit-Remaining %d, want %d", g, wantRem)
		}
		if g := intHeader(t, h, "X-RateLimit-Reset"); g != refCeil(d.ResetAfter) {
			t.Errorf("X-RateLimit-Reset %d for %v", g, d.ResetAfter)
		}
	} else if h.Get("X-RateLimit-Limit") != "" {
		t.Errorf("legacy headers in style %v", st)
	}
	if st != core.HeadersBoth && st != core.HeadersIETF {
		if h.Get("RateLimit") != "" {
			t.Errorf("IETF headers in style %v", st)
		}
		return
	}
	pname, rest := parseSFName(t, h.Get("RateLimit-Policy"))
	p := params(t, rest)
	if p["q"] != events || p["w"] != max(refCeil(d.Limit.Period), 1) || len(p) != 2 {
		t.Errorf("RateLimit-Policy %q for %+v", h.Get("RateLimit-Policy"), d.Limit)
	}
	rname, rest := parseSFName(t, h.Get("RateLimit"))
	r := params(t, rest)
	if rname != pname || r["r"] != wantRem || r["t"] != wantT || len(r) != 2 {
		t.Fatalf("RateLimit %q for %+v", h.Get("RateLimit"), d)
	}
	if !allowed && r["t"] > ra {
		t.Errorf("t=%d after Retry-After %d", r["t"], ra)
	}
	name := d.Limit.Name
	switch {
	case name == "":
		if pname != "default" {
			t.Errorf("unnamed policy called %q", pname)
		}
	case quotedLen(clean(name)) <= 66: // a core name's longest (64 bytes)
		if pname != clean(name) {
			t.Errorf("name %q sent as %q", name, pname)
		}
	case !strings.HasPrefix(clean(name), pname) || quotedLen(pname) < 60 || quotedLen(pname) > 80:
		t.Errorf("name %q (%d bytes) cut to %q", name, len(name), pname)
	}
}

// FuzzHeaders feeds arbitrary decisions, including ones no core limiter
// makes (negative numbers, huge durations, long names with control bytes),
// to WriteHeaders and checks every value with checkHeaders.
func FuzzHeaders(f *testing.F) {
	f.Add(true, 100, int64(time.Minute), "api", 42, int64(17*time.Second), int64(0), uint8(0))
	f.Add(false, 5, int64(time.Second), "", 0, int64(time.Second), int64(200*time.Millisecond), uint8(0))
	f.Add(false, 1, int64(1), "a\"b\\c\r\nSet-Cookie: x", -3, int64(-1), int64(-5), uint8(1))
	f.Add(false, -7, int64(math.MaxInt64), "ünïcode", math.MaxInt, int64(math.MaxInt64), int64(math.MaxInt64), uint8(2))
	f.Add(true, math.MaxInt32, int64(1500*time.Millisecond), "x", 1, int64(time.Nanosecond), int64(0), uint8(3))
	f.Add(false, 5, int64(time.Second), strings.Repeat("n", 140), 0, int64(time.Second), int64(200*time.Millisecond), uint8(0))
	styles := []core.HeaderStyle{core.HeadersBoth, core.HeadersLegacy, core.HeadersIETF, core.HeadersNone}
	f.Fuzz(func(t *testing.T, allowed bool, events int, period int64, name string, remaining int, reset, retry int64, style uint8) {
		st := styles[int(style)%len(styles)]
		l := httpmw.MustNew(decide(core.Decision{}, nil), byAddr, httpmw.WithHeaders(st))
		d := core.Decision{
			Allowed:    allowed,
			Limit:      core.Limit{Events: events, Period: time.Duration(period), Name: name},
			Remaining:  remaining,
			ResetAfter: time.Duration(reset),
			RetryAfter: time.Duration(retry),
		}
		h := http.Header{}
		l.WriteHeaders(h, d)
		checkHeaders(t, h, d, st)
	})
}

// TestLongPolicyName is issue 18's defect 5 through the middleware: a
// custom limiter whose Limit.Name is 140 bytes, or any length up to 300
// of any bytes, still answers every 429 with Retry-After >= 1 and every
// response with all its numbers. The names cut anywhere in a rune.
func TestLongPolicyName(t *testing.T) {
	t.Parallel()
	type tcase struct {
		name  string
		units []string
		ns    []int
	}
	all := make([]int, 301)
	for i := range all {
		all[i] = i
	}
	tests := []tcase{
		{"140 bytes", []string{"n"}, []int{140}},
		{"0 to 300 bytes", []string{"a", `"`, `x\`, "ü", "\xff", "\xa2", "\r\n", "é\"z", "€"}, all},
	}
	styles := []core.HeaderStyle{core.HeadersBoth, core.HeadersLegacy, core.HeadersIETF, core.HeadersNone}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, st := range styles {
				for _, unit := range tc.units {
					for _, n := range tc.ns {
						name := strings.Repeat(unit, n)[:n]
						l := core.Limit{Events: 5, Period: time.Minute, Name: name}
						for _, d := range []core.Decision{
							{Allowed: true, Limit: l, Remaining: 4, ResetAfter: 12 * time.Second},
							{Limit: l, ResetAfter: time.Minute, RetryAfter: 11500 * time.Millisecond},
							{Limit: l, Remaining: math.MaxInt, ResetAfter: math.MaxInt64, RetryAfter: math.MaxInt64},
							{Limit: l},
						} {
							w := do(mustMiddleware(t, decide(d, nil), byAddr, httpmw.WithHeaders(st), httpmw.WithDenyHandler(httpmw.ProblemDetails)), nil)
							if want := map[bool]int{true: 200, false: 429}[d.Allowed]; w.Code != want {
								t.Fatalf("%q: status %d, want %d", name, w.Code, want)
							}
							checkHeaders(t, w.Header(), d, st)
							if d.Allowed {
								continue
							}
							var body struct {
								Violated []string `json:"violated-policies"`
							}
							if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || len(body.Violated) != 1 {
								t.Fatalf("%q: problem body %q", name, w.Body.String())
							}
							if rl := w.Header().Get("RateLimit"); rl != "" {
								if sent, _ := parseSFName(t, rl); sent != body.Violated[0] {
									t.Fatalf("problem names %q, RateLimit %q", body.Violated[0], sent)
								}
							}
						}
					}
				}
			}
		})
	}
}

// TestPolicyNames checks how names reach RateLimit-Policy: valid core names
// untouched, quotes and backslashes escaped, bytes a String cannot hold
// replaced.
func TestPolicyNames(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, want string }{
		{"", `"default";q=1;w=1`},
		{"api.v2:read_write-1", `"api.v2:read_write-1";q=1;w=1`},
		{`a"b\c`, `"a\"b\\c";q=1;w=1`},
		{"a\r\nb\x00ü", `"a__b___";q=1;w=1`},
	}
	l := httpmw.MustNew(decide(core.Decision{}, nil), byAddr)
	for _, tt := range tests {
		h := http.Header{}
		l.WriteHeaders(h, core.Decision{Allowed: true, Limit: core.PerSecond(1).WithName(tt.name)})
		if g := h.Get("RateLimit-Policy"); g != tt.want {
			t.Errorf("name %q: %s, want %s", tt.name, g, tt.want)
		}
	}
}

// TestWindow checks w: whole seconds, rounded up, at least 1.
func TestWindow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		period time.Duration
		w      string
	}{
		{time.Millisecond, "1"}, {time.Second, "1"}, {1500 * time.Millisecond, "2"},
		{time.Minute, "60"}, {24 * time.Hour, "86400"},
	}
	l := httpmw.MustNew(decide(core.Decision{}, nil), byAddr, httpmw.WithHeaders(core.HeadersIETF))
	for _, tt := range tests {
		h := http.Header{}
		l.WriteHeaders(h, core.Decision{Allowed: true, Limit: core.Limit{Events: 3, Period: tt.period}})
		if g, want := h.Get("RateLimit-Policy"), `"default";q=3;w=`+tt.w; g != want {
			t.Errorf("period %v: %s, want %s", tt.period, g, want)
		}
	}
}

// TestWriteHeadersAllocs guards the hot path's allocation budget: header
// values come from slabs, so a request allocates nothing on average (a slab
// now and then, well under one per request).
func TestWriteHeadersAllocs(t *testing.T) {
	l := httpmw.MustNew(decide(core.Decision{}, nil), byAddr)
	allowed := core.Decision{Allowed: true, Limit: demo, Remaining: 42, ResetAfter: 17 * time.Second}
	denied := core.Decision{Limit: demo, ResetAfter: time.Minute, RetryAfter: 10 * time.Second}
	// The longest name core accepts costs nothing more.
	longest := core.PerMinute(6).WithName(strings.Repeat("n", 64))
	long := core.Decision{Limit: longest, ResetAfter: time.Minute, RetryAfter: 10 * time.Second}
	h := http.Header{}
	for _, d := range []core.Decision{allowed, denied, long} {
		l.WriteHeaders(h, d) // formats the policy once
		if n := testing.AllocsPerRun(1000, func() { clear(h); l.WriteHeaders(h, d) }); n > 0 {
			t.Errorf("WriteHeaders(%+v): %v allocations per call, want 0", d, n)
		}
	}
}

// TestNoSharedStorage checks what two responses may share: only the
// read-only values that repeat (the limit, the policy, numbers below
// fields.SharedNumbers), so that editing one response's per-request value
// in place cannot touch another's, and Set, Add and Del on one response
// never change another.
func TestNoSharedStorage(t *testing.T) {
	t.Parallel()
	l := httpmw.MustNew(decide(core.Decision{}, nil), byAddr)
	readOnly := map[string]bool{"X-Ratelimit-Limit": true, "Ratelimit-Policy": true}
	seen := map[*string]bool{}
	var hs []http.Header
	for i := 0; i < 500; i++ {
		h := http.Header{}
		l.WriteHeaders(h, core.Decision{Allowed: i%3 != 0, Limit: demo, Remaining: 5000 + i%7, ResetAfter: time.Duration(5000+i) * time.Second, RetryAfter: 5000 * time.Second})
		for k, vs := range h {
			if readOnly[k] {
				continue
			}
			if seen[&vs[0]] {
				t.Fatalf("response %d: %s shares its slot with an earlier response", i, k)
			}
			seen[&vs[0]] = true
		}
		hs = append(hs, h)
	}
	for _, h := range hs[1:] {
		h["X-Ratelimit-Remaining"][0] = "edited"
		h["Ratelimit"][0] = "edited"
	}
	if g := hs[0].Get("X-RateLimit-Remaining"); g != "5000" {
		t.Errorf("first response's Remaining is %q after editing the others", g)
	}
	// The shared values: what a handler does to its headers stays there.
	small := func() http.Header {
		h := http.Header{}
		l.WriteHeaders(h, core.Decision{Allowed: true, Limit: demo, Remaining: 3, ResetAfter: time.Second})
		return h
	}
	a, b := small(), small()
	a.Add("X-RateLimit-Limit", "7")
	a.Add("X-RateLimit-Remaining", "7")
	a.Set("RateLimit-Policy", "x")
	a.Del("X-RateLimit-Reset")
	c := small()
	for _, h := range []http.Header{b, c} {
		if h.Get("X-RateLimit-Limit") != a.Values("X-RateLimit-Limit")[0] || len(h.Values("X-RateLimit-Limit")) != 1 ||
			h.Get("X-RateLimit-Remaining") != "3" || len(h.Values("X-RateLimit-Remaining")) != 1 ||
			h.Get("RateLimit-Policy") == "x" || h.Get("X-RateLimit-Reset") != "1" {
			t.Errorf("another response changed with the first: %v", h)
		}
	}
}
