package fleetsim

import (
	"fmt"
	"time"
)

// Algorithm is how the shared state counts: a bucket that refills, or a
// counter per aligned window.
type Algorithm int

const (
	// GCRA is a bucket of Burst units that refills at Events per Period
	// (GCRA and the token bucket decide alike for units of one).
	GCRA Algorithm = iota
	// FixedWindow admits Events per aligned Period.
	FixedWindow
)

// String names the algorithm as the report does.
func (a Algorithm) String() string {
	if a == FixedWindow {
		return "fixed window"
	}
	return "GCRA"
}

// Limit is the shared limit of the simulated key.
type Limit struct {
	Events    int
	Period    time.Duration
	Burst     int // GCRA only; FixedWindow uses Events
	Algorithm Algorithm
}

func (l Limit) validate() error {
	if l.Events < 1 || l.Period <= 0 || l.Period%time.Duration(l.Events) != 0 {
		return fmt.Errorf("fleetsim: limit needs Events >= 1 and a Period that Events divides into whole nanoseconds, got %d per %v", l.Events, l.Period)
	}
	if l.Algorithm == GCRA && l.Burst < 1 {
		return fmt.Errorf("fleetsim: a GCRA limit needs Burst >= 1, got %d", l.Burst)
	}
	return nil
}

// interval is the time one unit takes to refill.
func (l Limit) interval() time.Duration { return l.Period / time.Duration(l.Events) }

// capacity is what a fresh key may spend at one instant: the burst, or a
// whole window's quota.
func (l Limit) capacity() int {
	if l.Algorithm == FixedWindow {
		return l.Events
	}
	return l.Burst
}

// state is one limiter's state in integer nanoseconds, so a run is exact
// and the same on every machine.
type state struct {
	lim    Limit
	tat    time.Duration // GCRA: theoretical arrival time
	window int64         // FixedWindow: index of the counted window
	count  int
}

// newState returns the state at now. A drained GCRA key starts with an
// empty bucket, as if it had been saturated just before the run.
func newState(lim Limit, now time.Duration, drained bool) state {
	s := state{lim: lim, tat: now, window: lim.windowOf(now)}
	if drained && lim.Algorithm == GCRA {
		s.tat = now + time.Duration(lim.Burst)*lim.interval()
	}
	return s
}

func (l Limit) windowOf(t time.Duration) int64     { return int64(t / l.Period) }
func (l Limit) windowEnd(w int64) time.Duration    { return time.Duration(w+1) * l.Period }
func (l Limit) sameWindow(a, b time.Duration) bool { return l.windowOf(a) == l.windowOf(b) }

// available is how many units could be taken at now.
func (s *state) available(now time.Duration) int {
	if s.lim.Algorithm == FixedWindow {
		if s.lim.windowOf(now) != s.window {
			return s.lim.Events
		}
		return s.lim.Events - s.count
	}
	t := max(s.tat, now)
	a := int((now + time.Duration(s.lim.Burst)*s.lim.interval() - t) / s.lim.interval())
	return max(a, 0)
}

// take charges k units at now; k must not exceed available(now).
func (s *state) take(now time.Duration, k int) {
	if s.lim.Algorithm == FixedWindow {
		if w := s.lim.windowOf(now); w != s.window {
			s.window, s.count = w, 0
		}
		s.count += k
		return
	}
	s.tat = max(s.tat, now) + time.Duration(k)*s.lim.interval()
}

// giveBack returns k unspent units charged in window w. A bucket never
// refills past full; a window's refund counts only in that window.
func (s *state) giveBack(now time.Duration, k int, w int64) {
	if s.lim.Algorithm == FixedWindow {
		if s.lim.windowOf(now) == w && s.window == w {
			s.count = max(s.count-k, 0)
		}
		return
	}
	s.tat = max(s.tat-time.Duration(k)*s.lim.interval(), now)
}
