package fields_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/fields"
)

// format returns the fields of d in style as "name: value" lines.
func format(d core.Decision, style core.HeaderStyle) string {
	p := fields.NewPolicyText(d.Limit)
	var v fields.Values
	v.Format(d, &p, style)
	text := string(v.Text())
	var b strings.Builder
	for i := 0; i < v.Len(); i++ {
		f, val := v.Field(i, text)
		fmt.Fprintf(&b, "%s: %s\n", f.HTTP(), val)
	}
	return b.String()
}

func TestFormat(t *testing.T) {
	t.Parallel()
	api := core.PerMinute(100).WithName("api")
	tests := []struct {
		name  string
		d     core.Decision
		style core.HeaderStyle
		want  string
	}{
		{"allowed, both", core.Decision{Allowed: true, Limit: api, Remaining: 42, ResetAfter: 17500 * time.Millisecond}, core.HeadersBoth,
			"X-Ratelimit-Limit: 100\nX-Ratelimit-Remaining: 42\nX-Ratelimit-Reset: 18\nRatelimit-Policy: \"api\";q=100;w=60\nRatelimit: \"api\";r=42;t=18\n"},
		{"denied, both: t is the retry wait, Reset the whole-again wait", core.Decision{Limit: api, RetryAfter: 600 * time.Millisecond, ResetAfter: time.Minute}, core.HeadersBoth,
			"X-Ratelimit-Limit: 100\nX-Ratelimit-Remaining: 0\nX-Ratelimit-Reset: 60\nRatelimit-Policy: \"api\";q=100;w=60\nRatelimit: \"api\";r=0;t=1\nRetry-After: 1\n"},
		{"denied, legacy", core.Decision{Limit: api, RetryAfter: 2*time.Second + 1, ResetAfter: time.Minute}, core.HeadersLegacy,
			"X-Ratelimit-Limit: 100\nX-Ratelimit-Remaining: 0\nX-Ratelimit-Reset: 60\nRetry-After: 3\n"},
		{"denied with no wait still says 1", core.Decision{Limit: api}, core.HeadersIETF,
			"Ratelimit-Policy: \"api\";q=100;w=60\nRatelimit: \"api\";r=0;t=0\nRetry-After: 1\n"},
		{"denied, none: Retry-After only", core.Decision{Limit: api, RetryAfter: time.Second}, core.HeadersNone, "Retry-After: 1\n"},
		{"allowed, none: nothing", core.Decision{Allowed: true, Limit: api}, core.HeadersNone, ""},
		{"negative numbers are 0, unnamed is default", core.Decision{Allowed: true, Limit: core.Limit{Events: 3, Period: 500 * time.Millisecond}, Remaining: -4, ResetAfter: -time.Second}, core.HeadersBoth,
			"X-Ratelimit-Limit: 3\nX-Ratelimit-Remaining: 0\nX-Ratelimit-Reset: 0\nRatelimit-Policy: \"default\";q=3;w=1\nRatelimit: \"default\";r=0;t=0\n"},
	}
	for _, tc := range tests {
		if got := format(tc.d, tc.style); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

func TestSFString(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"a": `"a"`, `q"\`: `"q\"\\"`, "a\r\nb\xff": `"a__b_"`} {
		if got := fields.SFString(in); got != want {
			t.Errorf("SFString(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestCache(t *testing.T) {
	t.Parallel()
	made := 0
	c := fields.NewCache(func(l core.Limit) *string { made++; s := l.String(); return &s })
	a, b := core.PerSecond(1), core.PerSecond(2)
	if c.Get(a) != c.Get(a) || c.Get(b) == c.Get(a) || made != 2 {
		t.Fatalf("made %d entries for 2 limits", made)
	}
	for i := range 40 {
		c.Get(core.PerSecond(10 + i))
	}
	made = 0
	c.Get(core.PerSecond(50))
	c.Get(core.PerSecond(50))
	if made != 1 || c.Get(a) == nil || made != 1 {
		t.Errorf("a full cache does not keep the last limit missed, or forgets the first: made %d", made)
	}
}

// TestCacheMovingLimit: an adaptive limit moves, past the bound of the
// list.
func TestCacheMovingLimit(t *testing.T) {
	made := 0
	c := fields.NewCache(func(l core.Limit) *string { made++; s := l.String(); return &s })
	for i := range 40 {
		c.Get(core.PerSecond(10 + i))
	}
	// An adaptive limit moves: each new value is built once, then served
	// from the recent slot with no allocation until it moves again.
	for i := range 5 {
		l := core.PerSecond(100 + i)
		made = 0
		if n := testing.AllocsPerRun(100, func() { c.Get(l) }); n != 0 || made != 1 {
			t.Errorf("limit %d past the bound: made %d, %v allocs per Get", 100+i, made, n)
		}
	}
}

func TestFormatAllocs(t *testing.T) {
	p := fields.NewPolicyText(core.PerMinute(100))
	d := core.Decision{Limit: p.Limit, RetryAfter: time.Second}
	var sink int
	n := testing.AllocsPerRun(100, func() {
		var v fields.Values
		v.Format(d, &p, core.HeadersBoth)
		sink += v.Len() + len(v.Text())
	})
	if n != 0 {
		t.Errorf("%v allocs per Format", n)
	}
}

func TestPolicies(t *testing.T) {
	stack := []core.Limit{core.PerSecond(10).WithName("burst"), core.PerDay(1000).WithName("day")}
	if got, want := fields.JoinPolicies(stack), `"burst";q=10;w=1, "day";q=1000;w=86400`; got != want {
		t.Errorf("JoinPolicies = %s, want %s", got, want)
	}
	var c fields.Lists
	if c.Get(nil) != "" || c.Get(stack) != fields.JoinPolicies(stack) {
		t.Fatal("Lists.Get")
	}
	// An equal but distinct slice is another stack's: found by identity.
	other := append([]core.Limit(nil), stack[:1]...)
	if c.Get(other) != `"burst";q=10;w=1` || c.Get(stack[:1]) != `"burst";q=10;w=1` {
		t.Error("Lists.Get confused slices")
	}
	// The deciding policy describes the rest; RateLimit-Policy lists all.
	d := core.Decision{Allowed: true, Limit: stack[1], Remaining: 7, ResetAfter: time.Minute}
	p := fields.NewPolicyText(d.Limit)
	var v fields.Values
	v.Format(d, &p, core.HeadersBoth)
	v.SetPolicies(c.Get(stack))
	text := string(v.Text())
	var b strings.Builder
	for i := 0; i < v.Len(); i++ {
		f, val := v.Field(i, text)
		fmt.Fprintf(&b, "%s: %s\n", f.HTTP(), val)
	}
	want := "X-Ratelimit-Limit: 1000\nX-Ratelimit-Remaining: 7\nX-Ratelimit-Reset: 60\n" +
		"Ratelimit-Policy: \"burst\";q=10;w=1, \"day\";q=1000;w=86400\nRatelimit: \"day\";r=7;t=60\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	n := testing.AllocsPerRun(100, func() {
		var v fields.Values
		v.Format(d, &p, core.HeadersBoth)
		v.SetPolicies(c.Get(stack))
		_, _ = v.Field(3, text)
	})
	if n != 0 {
		t.Errorf("%v allocs per stacked Format", n)
	}
}

type lister struct {
	core.Limiter
	ls []core.Limit
}

func (l lister) Policies() []core.Limit { return l.ls }

func TestListsOf(t *testing.T) {
	var c fields.Lists
	if c.Of(core.MustNew(core.PerSecond(1))) != "" {
		t.Error("a single limiter listed")
	}
	var l core.Limiter = lister{ls: []core.Limit{core.PerSecond(1).WithName("a"), core.PerHour(9).WithName("b")}}
	if got := c.Of(l); got != `"a";q=1;w=1, "b";q=9;w=3600` {
		t.Errorf("Of = %s", got)
	}
	if n := testing.AllocsPerRun(100, func() { _ = c.Of(l) }); n != 0 {
		t.Errorf("%v allocs per cached Of", n)
	}
}
