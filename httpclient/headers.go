package httpclient

import (
	"net/http"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"

	"github.com/floodgate/floodgate/internal/retry"
)

// RetryDelay reports the wait a response's header asks for before the
// request is sent again, at instant now:
//
//   - Retry-After, when present and valid: delta-seconds, or an HTTP-date
//     (a date in the past is a delay of 0);
//   - otherwise the RateLimit field (IETF draft-ietf-httpapi-ratelimit-headers),
//     when a policy in it is exhausted (r=0): its t, in seconds; for an
//     exhausted policy without t, its window w from RateLimit-Policy. With
//     several exhausted policies, the longest of their waits.
//
// ok is false when the header asks for no wait: no Retry-After, no
// exhausted policy, or fields that do not parse (malformed fields are
// ignored, never an error). Delays too long for a time.Duration are the
// largest Duration.
func RetryDelay(h http.Header, now time.Time) (d time.Duration, ok bool) {
	if v, present := h["Retry-After"]; present && len(v) > 0 {
		if d, ok := ParseRetryAfter(v[0], now); ok {
			return d, true
		}
	}
	return rateLimitDelay(h.Values("RateLimit"), h.Values("RateLimit-Policy"))
}

// ParseRetryAfter parses a Retry-After value (RFC 9110, section 10.2.3):
// delta-seconds, or an HTTP-date, which is turned into a delay from now (0
// when it is past). ok is false when v is neither.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.Trim(v, " \t")
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		return seconds(v), true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// isDigits reports whether s is 1*DIGIT.
func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// seconds converts a string of decimal digits to a Duration of that many
// seconds, saturating at the largest Duration.
func seconds(digits string) time.Duration {
	const limit = int64(retry.MaxDuration / time.Second)
	var n int64
	for i := 0; i < len(digits); i++ {
		n = n*10 + int64(digits[i]-'0')
		if n > limit {
			return retry.MaxDuration
		}
	}
	return secondsDuration(n)
}

// secondsDuration is n seconds, for n >= 0, saturating at the largest
// Duration.
func secondsDuration(n int64) time.Duration {
	if n > int64(retry.MaxDuration/time.Second) {
		return retry.MaxDuration
	}
	return time.Duration(n) * time.Second
}

// quota is one policy's state in a RateLimit field: "name";r=…;t=….
type quota struct {
	// Name is the policy's name (the item's string or token).
	Name string
	// Remaining is the r parameter: the quota units left.
	Remaining int64
	// Reset is the t parameter, when HasReset: the seconds until the quota
	// is reset (or, on a refusal from floodgate, until a retry can succeed).
	Reset    int64
	HasReset bool
}

// policy is one policy of a RateLimit-Policy field: "name";q=…;w=….
type policy struct {
	// Name is the policy's name (the item's string or token).
	Name string
	// Quota is the q parameter: the units the policy allows per window.
	Quota int64
	// Window is the w parameter, when HasWindow: the window's length in
	// seconds.
	Window    int64
	HasWindow bool
}

// parseRateLimit parses RateLimit field lines (a Structured Field List,
// RFC 9651) into the quotas they describe. Items without a valid r (a
// non-negative integer) are left out, as are negative t parameters and
// inner lists; a list that does not parse gives nil.
func parseRateLimit(lines []string) []quota {
	list := parseList(lines)
	var qs []quota
	for _, it := range list {
		r, ok := intParam(it.Params, "r")
		if !ok {
			continue
		}
		q := quota{Name: itemName(it), Remaining: r}
		q.Reset, q.HasReset = intParam(it.Params, "t")
		qs = append(qs, q)
	}
	return qs
}

// parseRateLimitPolicy parses RateLimit-Policy field lines (a Structured
// Field List) into the policies they list. Items without a valid q (a
// non-negative integer) are left out, as are negative w parameters and
// inner lists; a list that does not parse gives nil.
func parseRateLimitPolicy(lines []string) []policy {
	list := parseList(lines)
	var ps []policy
	for _, it := range list {
		q, ok := intParam(it.Params, "q")
		if !ok {
			continue
		}
		p := policy{Name: itemName(it), Quota: q}
		p.Window, p.HasWindow = intParam(it.Params, "w")
		ps = append(ps, p)
	}
	return ps
}

// parseList returns the items of a Structured Field List, or nil when the
// lines do not parse (or there are none).
func parseList(lines []string) []httpsfv.Item {
	if len(lines) == 0 {
		return nil
	}
	list, err := httpsfv.UnmarshalList(lines)
	if err != nil {
		return nil
	}
	items := make([]httpsfv.Item, 0, len(list))
	for _, m := range list {
		if it, ok := m.(httpsfv.Item); ok && it.Params != nil {
			items = append(items, it)
		}
	}
	return items
}

// itemName is an item's value as a name: the draft makes it a String;
// earlier drafts and some servers send a Token.
func itemName(it httpsfv.Item) string {
	switch v := it.Value.(type) {
	case string:
		return v
	case httpsfv.Token:
		return string(v)
	}
	return ""
}

// intParam returns parameter k when it is a non-negative integer.
func intParam(p *httpsfv.Params, k string) (int64, bool) {
	v, ok := p.Get(k)
	if !ok {
		return 0, false
	}
	n, ok := v.(int64)
	if !ok || n < 0 {
		return 0, false
	}
	return n, true
}

// rateLimitDelay is the wait the RateLimit fields ask for: the longest
// reset of the exhausted policies (r=0), taking a policy's window from
// RateLimit-Policy when its RateLimit item has no t.
func rateLimitDelay(rl, policyLines []string) (time.Duration, bool) {
	var (
		worst    time.Duration
		found    bool
		policies []policy
		parsed   bool
	)
	for _, q := range parseRateLimit(rl) {
		if q.Remaining > 0 {
			continue
		}
		secs, ok := q.Reset, q.HasReset
		if !ok {
			if !parsed {
				policies, parsed = parseRateLimitPolicy(policyLines), true
			}
			for _, p := range policies {
				if p.Name == q.Name && p.HasWindow {
					secs, ok = p.Window, true
					break
				}
			}
		}
		if !ok {
			continue
		}
		worst, found = max(worst, secondsDuration(secs)), true
	}
	return worst, found
}
