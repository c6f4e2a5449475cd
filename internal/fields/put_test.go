package fields_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/fields"
)

// samePut checks that Put sets exactly the fields want (what Values.Format
// gave, by field) under both key sets, each value in a slot of its own
// with capacity 1, with list in RateLimit-Policy when not empty. It
// returns what differs, or "".
func samePut(d core.Decision, p *fields.PolicyText, style core.HeaderStyle, list string, want map[fields.Field]string) string {
	for _, keys := range []fields.Keys{fields.HTTPKeys, fields.MetadataKeys} {
		m := map[string][]string{}
		n := fields.Put(m, keys, &d, p, style, list)
		if n != len(want) || len(m) != len(want) {
			return fmt.Sprintf("Put (keys %d) set %d fields (%d in the map) %v, want %d: %v", keys, n, len(m), m, len(want), want)
		}
		for f, val := range want {
			name := f.HTTP()
			if keys == fields.MetadataKeys {
				name = f.Metadata()
			}
			if f == fields.Policy && list != "" {
				val = list
			}
			if vs := m[name]; len(vs) != 1 || cap(vs) != 1 || vs[0] != val {
				return fmt.Sprintf("Put (keys %d): %s = %q (cap %d), Format says %q", keys, name, vs, cap(vs), val)
			}
		}
	}
	return ""
}

// TestPut checks Put against Format for the decisions of TestFormat's kind,
// stacked lists included (checkFields compares them for every name length
// and extreme number as well).
func TestPut(t *testing.T) {
	t.Parallel()
	api := core.PerMinute(100).WithName("api")
	decisions := []core.Decision{
		{Allowed: true, Limit: api, Remaining: 42, ResetAfter: 17500 * time.Millisecond},
		{Limit: api, RetryAfter: 600 * time.Millisecond, ResetAfter: time.Minute},
		{Limit: api},
		{Allowed: true, Limit: core.Limit{Events: 3, Period: 500 * time.Millisecond}, Remaining: -4, ResetAfter: -time.Second},
	}
	for _, d := range decisions {
		for _, style := range styles {
			for _, list := range []string{"", `"a";q=1;w=1, "api";q=100;w=60`} {
				p := fields.NewPolicyText(d.Limit)
				var v fields.Values
				v.Format(d, &p, style)
				text := string(v.Text())
				want := map[fields.Field]string{}
				for i := 0; i < v.Len(); i++ {
					f, val := v.Field(i, text)
					want[f] = val
				}
				if err := samePut(d, &p, style, list, want); err != "" {
					t.Errorf("%+v, style %v: %s", d, style, err)
				}
			}
		}
	}
	// No policy text is needed when no rate-limit field is sent.
	m := map[string][]string{}
	if n := fields.Put(m, fields.HTTPKeys, &core.Decision{RetryAfter: time.Second}, nil, core.HeadersNone, ""); n != 1 || m["Retry-After"][0] != "1" {
		t.Errorf("a denial without a policy: %v", m)
	}
	if n := fields.Put(m, fields.HTTPKeys, &core.Decision{Allowed: true}, nil, core.HeadersBoth, ""); n != 0 {
		t.Errorf("an admission without a policy set %d fields", n)
	}
}

func TestPutAllocs(t *testing.T) {
	p := fields.NewPolicyText(core.PerMinute(100).WithName("bench"))
	m := map[string][]string{}
	for _, d := range []core.Decision{
		{Allowed: true, Limit: p.Limit, Remaining: 1 << 30, ResetAfter: time.Second},
		{Limit: p.Limit, RetryAfter: time.Second, ResetAfter: time.Minute},
	} {
		fields.Put(m, fields.HTTPKeys, &d, &p, core.HeadersBoth, "")
		if n := testing.AllocsPerRun(1000, func() { clear(m); fields.Put(m, fields.HTTPKeys, &d, &p, core.HeadersBoth, "") }); n > 0 {
			t.Errorf("%v allocs per Put of %+v", n, d)
		}
	}
}

// TestPutStorage checks what two responses share: the read-only values
// (the limit, the policy, numbers below SharedNumbers) and nothing else;
// the numbers on either side of the bound read right.
func TestPutStorage(t *testing.T) {
	p := fields.NewPolicyText(core.PerMinute(5000).WithName("api"))
	put := func(remaining int, reset time.Duration) map[string][]string {
		m := map[string][]string{}
		d := core.Decision{Allowed: true, Limit: p.Limit, Remaining: remaining, ResetAfter: reset}
		fields.Put(m, fields.HTTPKeys, &d, &p, core.HeadersBoth, "")
		return m
	}
	same := func(a, b []string) bool { return &a[0] == &b[0] }
	for _, n := range []int{0, 1, fields.SharedNumbers - 1, fields.SharedNumbers, 4999} {
		a, b := put(n, time.Duration(n)*time.Second), put(n, time.Duration(n)*time.Second)
		want := fmt.Sprint(n)
		for _, k := range []string{"X-Ratelimit-Remaining", "X-Ratelimit-Reset"} {
			if a[k][0] != want || b[k][0] != want {
				t.Errorf("%d: %s = %q and %q, want %q", n, k, a[k], b[k], want)
			}
			if shared := same(a[k], b[k]); shared != (n < fields.SharedNumbers) {
				t.Errorf("%d: %s shared = %v", n, k, shared)
			}
		}
		if same(a["Ratelimit"], b["Ratelimit"]) {
			t.Errorf("%d: two responses share RateLimit's storage", n)
		}
		for _, k := range []string{"X-Ratelimit-Limit", "Ratelimit-Policy"} {
			if !same(a[k], b[k]) || cap(a[k]) != 1 {
				t.Errorf("%d: %s is not the shared read-only value (cap %d)", n, k, cap(a[k]))
			}
		}
		// Add copies rather than writing into a shared value.
		http.Header(a).Add("X-Ratelimit-Limit", "x")
		if b["X-Ratelimit-Limit"][0] != "5000" || len(b["X-Ratelimit-Limit"]) != 1 {
			t.Fatalf("Add on one response changed another's: %q", b["X-Ratelimit-Limit"])
		}
	}
	// A stack's list is a value of its own.
	m1, m2 := map[string][]string{}, map[string][]string{}
	d := core.Decision{Allowed: true, Limit: p.Limit, Remaining: 3}
	list := `"a";q=1;w=1, "api";q=5000;w=60`
	fields.Put(m1, fields.HTTPKeys, &d, &p, core.HeadersBoth, list)
	fields.Put(m2, fields.HTTPKeys, &d, &p, core.HeadersBoth, list)
	if m1["Ratelimit-Policy"][0] != list || same(m1["Ratelimit-Policy"], m2["Ratelimit-Policy"]) {
		t.Errorf("stack list: %q, shared %v", m1["Ratelimit-Policy"], same(m1["Ratelimit-Policy"], m2["Ratelimit-Policy"]))
	}
}
