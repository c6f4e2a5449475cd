package core

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// units maps the period words ParseLimit accepts to their length.
var units = map[string]time.Duration{
	"ms": time.Millisecond, "millisecond": time.Millisecond,
	"s": time.Second, "sec": time.Second, "second": time.Second,
	"m": time.Minute, "min": time.Minute, "minute": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hour": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour,
}

// ParseLimit reads a limit from a configuration string:
//
//	100/s                  100 events per second, burst 100
//	5/min                  5 per minute
//	1000/h burst=50        1000 per hour, at most 50 at once
//	10/s name=login        a named policy
//	30/10s                 30 per 10 seconds (any Go duration: 500ms, 1m30s)
//	2/day                  units: ms, s, sec, second, m, min, minute, h, hr, hour, d, day
//
// and the algorithm with its settings, the fields of [Limit] after Name:
//
//	100/s algorithm=gcra
//	100/s overdraft=true                         token bucket that lends
//	10/s max-delay=2s                            leaky bucket (the setting implies it)
//	100/s warm-up=1m cold-factor=3               warm-up
//	100/min sub-windows=6                        sliding window over 6 sub-windows
//	5000/h algorithm=sliding-log max-entries=8192
//
// Algorithms are named as [Algorithm.String] names them. Unit words may be
// plural and any case. Options are separated by spaces and appear at most
// once. A setting of 0 means what the zero value of its [Limit] field
// means, its default: burst=0 is a burst of events, as is leaving burst
// out, and so are cold-factor=0, max-delay=0 and max-entries=0.
//
// The result is validated. An error quotes the whole string and names the
// part that is wrong. [Limit.String] writes what ParseLimit reads.
func ParseLimit(s string) (Limit, error) {
	if strings.TrimSpace(s) == "" {
		return Limit{}, errors.New("core: empty limit; write it like \"100/s\" or \"5/min burst=10\"")
	}
	l, err := parseLimit(s)
	if err != nil {
		return Limit{}, fmt.Errorf("core: limit %q: %s", s, err)
	}
	return l, nil
}

// parseLimit is ParseLimit without its errors' prefix, which names the
// string. Validate's errors lose their own "core: limit", which the
// prefix says.
func parseLimit(s string) (Limit, error) {
	fields := strings.Fields(s)
	rate, opts := fields[0], fields[1:]
	num, per, ok := strings.Cut(rate, "/")
	if !ok {
		like := "100/s"
		if len(fields) >= 3 && strings.EqualFold(fields[1], "per") {
			like = fields[0] + "/" + fields[2]
		}
		return Limit{}, fmt.Errorf("no '/'; write events/period, like %q", like)
	}
	events, err := parseCount(num, 1)
	if err != nil {
		return Limit{}, fmt.Errorf("events %q: %v", num, err)
	}
	period, err := parsePeriod(per)
	if err != nil {
		return Limit{}, err
	}
	l := Limit{Events: events, Period: period, Burst: events}
	seen := map[string]bool{}
	for _, o := range opts {
		k, v, ok := strings.Cut(o, "=")
		if !ok {
			return Limit{}, fmt.Errorf("option %q is not key=value; use one of %s", o, limitOptions)
		}
		k = strings.ToLower(k)
		if seen[k] {
			return Limit{}, fmt.Errorf("option %q given twice", k)
		}
		seen[k] = true
		if err := l.set(k, v); err != nil {
			return Limit{}, err
		}
	}
	if l.Burst == 0 {
		// burst=0 is the default, so that it parses as leaving burst out
		// does and the two compare equal.
		l.Burst = events
	}
	if seen["algorithm"] {
		// An explicit algorithm wins over the one a setting implies, so
		// that Validate names a setting the algorithm does not take.
		a, _ := ParseAlgorithm(algorithmOf(opts))
		l.Algorithm = a
	}
	if err := l.Validate(); err != nil {
		return Limit{}, errors.New(strings.TrimPrefix(strings.TrimPrefix(err.Error(), "core: "), "limit "))
	}
	return l, nil
}

// limitOptions lists the options ParseLimit takes, for its errors.
const limitOptions = "burst, name, algorithm, overdraft, max-delay, warm-up, cold-factor, sub-windows, max-entries"

// set applies one option of ParseLimit's syntax to l.
func (l *Limit) set(k, v string) error {
	var err error
	switch k {
	case "burst":
		l.Burst, err = parseCount(v, 0)
	case "name":
		if v == "" {
			return errors.New("the name is empty")
		}
		l.Name = v
	case "algorithm":
		l.Algorithm, err = ParseAlgorithm(v)
		if err != nil {
			return errors.New(strings.TrimPrefix(err.Error(), "core: "))
		}
	case "overdraft":
		switch strings.ToLower(v) {
		case "true":
			l.Overdraft = true
		case "false":
		default:
			err = errors.New("want true or false")
		}
	case "max-delay":
		l.Algorithm = LeakyBucket
		l.MaxDelay, err = parseDuration(strings.ToLower(v))
	case "warm-up":
		l.Algorithm = WarmUp
		l.WarmUp, err = parseDuration(strings.ToLower(v))
	case "cold-factor":
		l.ColdFactor, err = strconv.ParseFloat(v, 64)
	case "sub-windows":
		l.Algorithm = SlidingWindow
		l.SubWindows, err = parseCount(v, 2)
	case "max-entries":
		l.MaxEntries, err = parseCount(v, 0)
	default:
		return fmt.Errorf("unknown option %q; use %s", k, limitOptions)
	}
	if err != nil {
		return fmt.Errorf("%s %q: %v", k, v, err)
	}
	return nil
}

// algorithmOf returns the value of the algorithm= option among opts.
func algorithmOf(opts []string) string {
	for _, o := range opts {
		if k, v, _ := strings.Cut(o, "="); strings.EqualFold(k, "algorithm") {
			return v
		}
	}
	return ""
}

// ParseAlgorithm reads an algorithm's name as [Algorithm.String] writes it
// ("token-bucket", "gcra", "fixed-window", "sliding-window",
// "leaky-bucket", "warm-up", "sliding-log", "concurrency"), in any case.
func ParseAlgorithm(s string) (Algorithm, error) {
	for a := TokenBucket; a <= Concurrency; a++ {
		if strings.EqualFold(s, a.String()) {
			return a, nil
		}
	}
	return 0, fmt.Errorf("core: unknown algorithm %q; use token-bucket, gcra, fixed-window, sliding-window, leaky-bucket, warm-up, sliding-log or concurrency", s)
}

// MustParseLimit is like ParseLimit but panics on error. It is meant for
// package-level variables initialised from constant strings.
func MustParseLimit(s string) Limit {
	l, err := ParseLimit(s)
	if err != nil {
		panic(err)
	}
	return l
}

// parseCount reads a decimal integer from lo to 2³¹−1 without sign or
// spaces. Every number it refuses, -5 as much as 0 or 1.5, gets the same
// message: the range to write one in.
func parseCount(s string, lo int) (int, error) {
	bad := fmt.Errorf("want a whole number from %d to %d", lo, math.MaxInt32)
	if s == "" {
		return 0, bad
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, bad
		}
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < int64(lo) {
		return 0, bad
	}
	return int(n), nil
}

func parsePeriod(s string) (time.Duration, error) {
	if s == "" {
		return 0, errors.New("the period is empty; use a unit like s, min, h, d or a duration like 10s")
	}
	w := strings.ToLower(s)
	if d, ok := units[w]; ok {
		return d, nil
	}
	if d, ok := units[strings.TrimSuffix(w, "s")]; ok && len(w) > 2 {
		return d, nil
	}
	if s[0] >= '0' && s[0] <= '9' {
		d, err := parseDuration(w)
		if err == nil && d > 0 {
			return d, nil
		}
	}
	return 0, fmt.Errorf("period %q is not a unit (s, min, h, d) or a positive duration like 10s", s)
}

// parseDuration accepts Go durations and also a number followed by one of
// the unit words ("10s", "1m30s", "2min", "1day").
func parseDuration(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, err
	}
	w := s[i:]
	u, ok := units[w]
	if !ok {
		u, ok = units[strings.TrimSuffix(w, "s")]
	}
	if !ok || len(w) == 0 {
		return 0, fmt.Errorf("unknown unit %q", w)
	}
	if n > int64(maxSpan/u) {
		return 0, errors.New("too long")
	}
	return time.Duration(n) * u, nil
}
