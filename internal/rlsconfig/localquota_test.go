package rlsconfig

import (
	"strings"
	"testing"
)

// TestLocalQuota: rate_limit's local_quota sets Rule.LocalQuota; the
// algorithms whose units cannot be leased, an unlimited rule and the field
// out of its place are errors that say what to change.
func TestLocalQuota(t *testing.T) {
	const head = "domain: d\ndescriptors:\n  - key: k\n"
	for _, tc := range []struct {
		name, yaml string
		local      bool
		err        string // part of the error; "": none
	}{
		{"on", head + "    rate_limit: {unit: second, requests_per_unit: 5, local_quota: true}\n", true, ""},
		{"off", head + "    rate_limit: {unit: second, requests_per_unit: 5, local_quota: false}\n", false, ""},
		{"left out", head + "    rate_limit: {unit: second, requests_per_unit: 5}\n", false, ""},
		{"gcra with a limits list", head + "    rate_limit: {unit: second, requests_per_unit: 5, algorithm: gcra, local_quota: true, limits: [{unit: hour, requests_per_unit: 100}]}\n", true, ""},
		{"sliding window", head + "    rate_limit: {unit: second, requests_per_unit: 5, algorithm: sliding-window, local_quota: true}\n", false,
			"local quota leases fixed-window, token-bucket and gcra limits, not sliding-window"},
		{"a layer's sliding window", head + "    rate_limit: {unit: second, requests_per_unit: 5, local_quota: true, limits: [{unit: hour, requests_per_unit: 100, algorithm: sliding-window}]}\n", false,
			"limits[0]"},
		{"unlimited", head + "    rate_limit: {unlimited: true, local_quota: true}\n", false, "unlimited: true takes no local_quota"},
		{"not a boolean", head + "    rate_limit: {unit: second, requests_per_unit: 5, local_quota: 3}\n", false, "local_quota"},
		{"beside rate_limit", head + "    local_quota: true\n    rate_limit: {unit: second, requests_per_unit: 5}\n", false, "belongs in rate_limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("q.yaml", []byte(tc.yaml))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r := c.Match(e("k=v")); r == nil || r.LocalQuota != tc.local {
				t.Errorf("rule %+v, want LocalQuota %v", r, tc.local)
			}
		})
	}
}
