package httpclient_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/httpclient"
)

// The parsers read what a misbehaving or hostile server sends: they must
// never panic, never return a negative wait or count, and agree with their
// rules. Seeds are inline and in testdata/fuzz.

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "120", "99999999999999999999", "Tue, 14 Nov 2023 22:01:30 GMT", "-1", "", "1.5"} {
		f.Add(s, int64(1_699_999_200))
	}
	f.Fuzz(func(t *testing.T, v string, now int64) {
		d, ok := httpclient.ParseRetryAfter(v, time.Unix(now, 0))
		if d < 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v, negative", v, d)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v, false; want 0 when not ok", v, d)
		}
		trimmed := strings.Trim(v, " \t")
		if digits := trimmed != "" && strings.Trim(trimmed, "0123456789") == ""; digits && !ok {
			t.Fatalf("ParseRetryAfter(%q) rejected delta-seconds", v)
		}
	})
}

func FuzzParseRateLimit(f *testing.F) {
	for _, s := range []string{`"burst";r=0;t=1`, `"a";r=1;t=2, "b";r=0`, `default;r=5`, `("a");r=0`, `"a";r=-1`, `"a";r=0;t=999999999999999`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		for _, q := range httpclient.ParseRateLimit([]string{v}) {
			if q.Remaining < 0 || q.Reset < 0 || (!q.HasReset && q.Reset != 0) {
				t.Fatalf("ParseRateLimit(%q) gave %+v", v, q)
			}
		}
	})
}

func FuzzParseRateLimitPolicy(f *testing.F) {
	for _, s := range []string{`"burst";q=5;w=1, "hourly";q=100000;w=3600`, `"a";q=5`, `"a";w=5`, `a;q=1;w=-1`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		for _, p := range httpclient.ParseRateLimitPolicy([]string{v}) {
			if p.Quota < 0 || p.Window < 0 || (!p.HasWindow && p.Window != 0) {
				t.Fatalf("ParseRateLimitPolicy(%q) gave %+v", v, p)
			}
		}
	})
}

// FuzzRetryDelay combines the three fields as a response carries them.
func FuzzRetryDelay(f *testing.F) {
	f.Add("1", `"burst";r=0;t=1`, `"burst";q=5;w=1`)
	f.Add("", `"hourly";r=0`, `"burst";q=5;w=1, "hourly";q=100000;w=3600`)
	f.Add("soon", `"a";r=0;t=7`, ``)
	f.Fuzz(func(t *testing.T, retryAfter, rl, policy string) {
		h := http.Header{}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		if rl != "" {
			h.Set("RateLimit", rl)
		}
		if policy != "" {
			h.Set("RateLimit-Policy", policy)
		}
		now := time.Unix(1_699_999_200, 0)
		d, ok := httpclient.RetryDelay(h, now)
		if d < 0 || (!ok && d != 0) {
			t.Fatalf("RetryDelay(%v) = %v, %v", h, d, ok)
		}
		if ra, raOK := httpclient.ParseRetryAfter(retryAfter, now); raOK && (!ok || d != ra) {
			t.Fatalf("RetryDelay(%v) = %v, %v; Retry-After %v must win", h, d, ok, ra)
		}
	})
}
