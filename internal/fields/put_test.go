package fields_test

import (
	"fmt"
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
