package fields_test

import (
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/fields"
)

// BenchmarkFormat measures formatting one allowed decision's fields in both
// styles, without writing them anywhere.
func BenchmarkFormat(b *testing.B) {
	p := fields.NewPolicyText(core.PerMinute(100).WithName("bench"))
	d := core.Decision{Allowed: true, Limit: p.Limit, Remaining: 57, ResetAfter: 25 * time.Second}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		var v fields.Values
		v.Format(d, &p, core.HeadersBoth)
		n += v.Len()
	}
	if n == 0 {
		b.Fatal("no fields")
	}
}

// BenchmarkTake measures carving value slots and text from the slabs.
func BenchmarkTake(b *testing.B) {
	text := []byte(`"bench";r=57;t=25`)
	b.ReportAllocs()
	for b.Loop() {
		vals, s := fields.Take(5, text)
		if len(vals) != 5 || len(s) != len(text) {
			b.Fatal("short")
		}
	}
}

// BenchmarkPut measures writing one allowed decision's fields in both
// styles into a header map, as httpmw does on every admitted request.
func BenchmarkPut(b *testing.B) {
	p := fields.NewPolicyText(core.PerMinute(100).WithName("bench"))
	d := core.Decision{Allowed: true, Limit: p.Limit, Remaining: 57, ResetAfter: 25 * time.Second}
	m := map[string][]string{}
	b.ReportAllocs()
	for b.Loop() {
		clear(m)
		fields.Put(m, fields.HTTPKeys, &d, &p, core.HeadersBoth, "")
	}
}
