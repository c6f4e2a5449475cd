package rlsconfig

import (
	"strings"
	"testing"
)

// FuzzParse: Parse never panics, and a configuration it accepts matches
// any descriptor without panicking, and every rule's limits validate.
func FuzzParse(f *testing.F) {
	f.Add([]byte(basicConfig), "key1=value1,subkey1=x")
	f.Add([]byte("domain: d\ndescriptors:\n  - key: k\n    value: a*b*c\n    share_threshold: true\n    rate_limit: {unit: second, requests_per_unit: 1}\n"), "k=aXbYc")
	f.Fuzz(func(t *testing.T, data []byte, desc string) {
		d, err := Parse("fuzz.yaml", data)
		if err != nil {
			// Each error names the file and, but for an empty file, its
			// line.
			errs := []error{err}
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				errs = j.Unwrap()
			}
			for _, err := range errs {
				e, ok := err.(*Error)
				if !ok || e.File != "fuzz.yaml" || e.Line < 1 && !strings.Contains(e.Err.Error(), "the file is empty") {
					t.Fatalf("error without the file and line: %#v", err)
				}
			}
			return
		}
		var entries []Entry
		for _, p := range strings.Split(desc, ",") {
			k, v, _ := strings.Cut(p, "=")
			entries = append(entries, Entry{k, v})
		}
		if r := d.Match(entries); r != nil {
			_ = r.Key(entries)
			_ = r.StatsKey(entries)
		}
		for _, r := range d.Rules() {
			_ = r.StatsKey(nil)
			for _, l := range r.Limits {
				if err := l.Validate(); err != nil {
					t.Fatalf("rule %s: limit %+v: %v", r.FullKey, l, err)
				}
			}
			if r.Unlimited && len(r.Limits) > 0 {
				t.Fatalf("unlimited rule %s with limits", r.FullKey)
			}
		}
	})
}
