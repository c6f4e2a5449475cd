package core

import (
	"fmt"
	"math"
	"time"
)

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
	if err := l.validateSettings(); err != nil {
		return err
	}
	// Building the algorithm checks what depends on the rate as well as
	// the settings (a log that needs too many entries, a warm-up whose
	// cold wait would overflow).
	if l.extended() {
		_, err := newWindowLog(l)
		return err
	}
	_, err := newAlgo(l)
	return err
}

// validateSettings checks the algorithm's settings on their own: each in
// range, and none given to an algorithm it does not apply to.
func (l Limit) validateSettings() error {
	a := l.Algorithm
	switch {
	case a > Concurrency:
		return fmt.Errorf("core: unknown algorithm %d; use TokenBucket, GCRA, FixedWindow, SlidingWindow, LeakyBucket, WarmUp, SlidingLog or Concurrency", int(a))
	case l.Overdraft && a != TokenBucket:
		return fmt.Errorf("core: Overdraft applies to the token bucket only, not %v", a)
	case l.MaxDelay != 0 && a != LeakyBucket:
		return fmt.Errorf("core: MaxDelay applies to LeakyBucket only, not %v", a)
	case (l.WarmUp != 0 || l.ColdFactor != 0) && a != WarmUp:
		return fmt.Errorf("core: WarmUp and ColdFactor apply to the WarmUp algorithm only, not %v", a)
	case l.SubWindows != 0 && a != SlidingWindow:
		return fmt.Errorf("core: SubWindows applies to SlidingWindow only, not %v", a)
	case l.MaxEntries != 0 && !l.extended():
		return fmt.Errorf("core: MaxEntries applies to SlidingLog and to SlidingWindow with SubWindows only, not %v", a)
	case l.MaxDelay < 0 || l.MaxDelay > maxSpan:
		return fmt.Errorf("core: limit MaxDelay %v: the longest wait must be > 0 and <= %v (0 for the default, %v)", l.MaxDelay, time.Duration(maxSpan), DefaultMaxDelay)
	case a == WarmUp && (l.WarmUp <= 0 || l.WarmUp > maxSpan):
		return fmt.Errorf("core: limit WarmUp %v: the WarmUp algorithm needs a warm-up period > 0 and <= %v, for example PerSecond(100).WithWarmUp(10*time.Second, 3)", l.WarmUp, time.Duration(maxSpan))
	case l.ColdFactor != 0 && !(l.ColdFactor >= 1 && l.ColdFactor <= 1<<20): // NaN fails both
		return fmt.Errorf("core: limit ColdFactor %v: the cold factor must be from 1 to %d (0 for the default, %d)", l.ColdFactor, 1<<20, DefaultColdFactor)
	case l.SubWindows != 0 && (l.SubWindows < 2 || l.SubWindows > maxSubWindows):
		return fmt.Errorf("core: limit SubWindows %d: the number of sub-windows must be from 2 to %d", l.SubWindows, maxSubWindows)
	case l.MaxEntries < 0 || l.MaxEntries > maxMaxEntries:
		return fmt.Errorf("core: limit MaxEntries %d: the cap must be from 1 to %d entries per key (0 for the default, %d)", l.MaxEntries, maxMaxEntries, DefaultMaxEntries)
	}
	return nil
}

// DefaultMaxDelay is the longest a [LeakyBucket] makes a request wait for
// its turn unless Limit.MaxDelay says otherwise.
const DefaultMaxDelay = time.Second

// DefaultColdFactor is how many times slower than the full rate a cold
// [WarmUp] key starts unless Limit.ColdFactor says otherwise, as in Guava.
const DefaultColdFactor = 3

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
