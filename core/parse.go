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
// once. The result is validated; the error names the part that is wrong.
// [Limit.String] writes what ParseLimit reads.
func ParseLimit(s string) (Limit, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return Limit{}, errors.New("core: empty limit; write it like \"100/s\" or \"5/min burst=10\"")
	}
	rate, opts := fields[0], fields[1:]
	num, per, ok := strings.Cut(rate, "/")
	if !ok {
		return Limit{}, fmt.Errorf("core: limit %q has no '/'; write events/period like \"100/s\"", rate)
	}
	events, err := parseCount(num)
	if err != nil {
		return Limit{}, fmt.Errorf("core: limit events %q: %v", num, err)
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
			return Limit{}, fmt.Errorf("core: limit option %q is not key=value; use one of %s", o, limitOptions)
		}
		k = strings.ToLower(k)
		if seen[k] {
			return Limit{}, fmt.Errorf("core: limit option %q given twice", k)
		}
		seen[k] = true
		if err := l.set(k, v); err != nil {
			return Limit{}, err
		}
	}
	if seen["algorithm"] {
		// An explicit algorithm wins over the one a setting implies, so
		// that Validate names a setting the algorithm does not take.
		a, _ := ParseAlgorithm(algorithmOf(opts))
		l.Algorithm = a
	}
	if err := l.Validate(); err != nil {
		return Limit{}, err
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
		l.Burst, err = parseCount(v)
	case "name":
		if v == "" {
			return errors.New("core: limit name is empty")
		}
		l.Name = v
	case "algorithm":
		l.Algorithm, err = ParseAlgorithm(v)
		if err != nil {
			return err
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
		l.SubWindows, err = parseCount(v)
	case "max-entries":
		l.MaxEntries, err = parseCount(v)
	default:
		return fmt.Errorf("core: unknown limit option %q; use %s", k, limitOptions)
	}
	if err != nil {
		return fmt.Errorf("core: limit %s %q: %v", k, v, err)
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

// parseCount reads a positive decimal integer without sign or spaces.
func parseCount(s string) (int, error) {
	if s == "" {
		return 0, errors.New("want a positive whole number")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errors.New("want a positive whole number")
		}
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("want at most %d", math.MaxInt32)
	}
	if n < 1 {
		return 0, errors.New("must be >= 1")
	}
	return int(n), nil
}

func parsePeriod(s string) (time.Duration, error) {
	if s == "" {
		return 0, errors.New("core: limit period is empty; use a unit like s, min, h, d or a duration like 10s")
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
	return 0, fmt.Errorf("core: limit period %q is not a unit (s, min, h, d) or a positive duration like 10s", s)
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
