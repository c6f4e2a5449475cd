package core

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Limit is a rate-limiting policy: Events per Period, with a Burst.
//
// For the token bucket and GCRA, Burst is how many cost-1 requests a fresh key
// may make at one instant; zero means "the same as Events". The window
// algorithms ignore Burst: their quota per window is Events.
//
// Name identifies the policy in RateLimit-Policy headers and gRPC details. It
// may hold letters, digits and ". _ - :" and be at most 64 bytes long.
//
// A Limit is a plain value; [Limit.Validate] reports what is wrong with one,
// and every constructor in this module that takes a Limit validates it.
type Limit struct {
	Events int
	Period time.Duration
	Burst  int
	Name   string
}

// PerSecond returns a limit of n events per second with a burst of n.
func PerSecond(n int) Limit { return Limit{Events: n, Period: time.Second, Burst: n} }

// PerMinute returns a limit of n events per minute with a burst of n.
func PerMinute(n int) Limit { return Limit{Events: n, Period: time.Minute, Burst: n} }

// PerHour returns a limit of n events per hour with a burst of n.
func PerHour(n int) Limit { return Limit{Events: n, Period: time.Hour, Burst: n} }

// PerDay returns a limit of n events per 24 hours with a burst of n.
func PerDay(n int) Limit { return Limit{Events: n, Period: 24 * time.Hour, Burst: n} }

// Every returns a limit of one event per interval with a burst of 1.
func Every(interval time.Duration) Limit { return Limit{Events: 1, Period: interval, Burst: 1} }

// WithBurst returns a copy of l with the given burst.
func (l Limit) WithBurst(burst int) Limit { l.Burst = burst; return l }

// WithName returns a copy of l with the given policy name.
func (l Limit) WithName(name string) Limit { l.Name = name; return l }

// EffectiveBurst is the burst the token bucket and GCRA use: Burst, or Events
// when Burst is zero.
func (l Limit) EffectiveBurst() int {
	if l.Burst == 0 {
		return l.Events
	}
	return l.Burst
}

// Interval is the time one event's worth of quota takes to come back,
// Period/Events rounded up to a whole nanosecond so that rounding never admits
// more than the policy says.
func (l Limit) Interval() time.Duration {
	if l.Events <= 0 {
		return 0
	}
	return (l.Period + time.Duration(l.Events) - 1) / time.Duration(l.Events)
}

// maxSpan bounds Burst*Interval and Period so that time arithmetic on
// nanoseconds never overflows (about 73 years).
const maxSpan = math.MaxInt64 / 4

// maxNameLen is the longest policy name accepted.
const maxNameLen = 64

// Validate reports whether l can be enforced, and if not, what to change.
func (l Limit) Validate() error {
	switch {
	case l.Events < 1:
		return fmt.Errorf("core: limit events must be >= 1, got %d", l.Events)
	case l.Events > math.MaxInt32:
		return fmt.Errorf("core: limit events must be <= %d, got %d", math.MaxInt32, l.Events)
	case l.Period <= 0:
		return fmt.Errorf("core: limit period must be > 0, got %v", l.Period)
	case l.Period > maxSpan:
		return fmt.Errorf("core: limit period must be <= %v, got %v", time.Duration(maxSpan), l.Period)
	case l.Burst < 0:
		return fmt.Errorf("core: limit burst must be >= 0 (0 means the same as events), got %d", l.Burst)
	case l.Burst > math.MaxInt32:
		return fmt.Errorf("core: limit burst must be <= %d, got %d", math.MaxInt32, l.Burst)
	}
	if b := int64(l.EffectiveBurst()); b > int64(maxSpan/l.Interval()) {
		return fmt.Errorf("core: limit burst %d at one event per %v spans more than %v; lower the burst or raise the rate", b, l.Interval(), time.Duration(maxSpan))
	}
	if err := validateName(l.Name); err != nil {
		return err
	}
	return nil
}

func validateName(name string) error {
	if len(name) > maxNameLen {
		return fmt.Errorf("core: limit name must be at most %d bytes, got %d", maxNameLen, len(name))
	}
	for i := 0; i < len(name); i++ {
		if !nameByte(name[i]) {
			return fmt.Errorf("core: limit name %q has byte %q at %d; use letters, digits and . _ - :", name, name[i], i)
		}
	}
	return nil
}

func nameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '.' || c == '_' || c == '-' || c == ':'
}

// String formats l in the syntax [ParseLimit] reads. For every valid l,
// ParseLimit(l.String()) has the same Events, Period, EffectiveBurst and Name.
func (l Limit) String() string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(l.Events))
	b.WriteByte('/')
	switch l.Period {
	case time.Second:
		b.WriteString("s")
	case time.Minute:
		b.WriteString("min")
	case time.Hour:
		b.WriteString("h")
	case 24 * time.Hour:
		b.WriteString("d")
	default:
		b.WriteString(l.Period.String())
	}
	if l.Burst != 0 && l.Burst != l.Events {
		b.WriteString(" burst=")
		b.WriteString(strconv.Itoa(l.Burst))
	}
	if l.Name != "" {
		b.WriteString(" name=")
		b.WriteString(l.Name)
	}
	return b.String()
}

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
// Unit words may be plural and any case. Options are separated by spaces and
// appear at most once. The result is validated; the error names the part that
// is wrong.
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
			return Limit{}, fmt.Errorf("core: limit option %q is not key=value; use burst=N or name=NAME", o)
		}
		k = strings.ToLower(k)
		if seen[k] {
			return Limit{}, fmt.Errorf("core: limit option %q given twice", k)
		}
		seen[k] = true
		switch k {
		case "burst":
			n, err := parseCount(v)
			if err != nil {
				return Limit{}, fmt.Errorf("core: limit burst %q: %v", v, err)
			}
			l.Burst = n
		case "name":
			if v == "" {
				return Limit{}, errors.New("core: limit name is empty")
			}
			l.Name = v
		default:
			return Limit{}, fmt.Errorf("core: unknown limit option %q; use burst=N or name=NAME", k)
		}
	}
	if err := l.Validate(); err != nil {
		return Limit{}, err
	}
	return l, nil
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
