package core

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// AdaptiveConfig configures an [Adaptive] limiter: a limit that moves
// between Low and High with a load signal.
//
// The direction: a signal at or below LowMark (little load) gives High, the
// generous limit; at or above HighMark (heavy load), Low, the strict one;
// between the marks, Events and Burst move linearly from High's to Low's
// (Sentinel's memory-adaptive rule, for any signal). Say LowMark 0.5 and
// HighMark 0.9 of the heap budget, High 1000/s and Low 100/s: at 0.7 the
// limit is 550/s.
type AdaptiveConfig struct {
	// Low is the limit under heavy load and High the limit under light
	// load. They must have the same Period and Name, and Low may not be
	// more generous than High: Events and EffectiveBurst at most High's.
	Low, High Limit
	// Signal reports the load now: heap in use, a latency, CPU use, in any
	// unit. It is read by Update, never by Allow. A NaN reading counts as
	// heavy load (the Low limit).
	Signal func() float64
	// LowMark and HighMark bound the signal's range, LowMark < HighMark,
	// both finite.
	LowMark, HighMark float64
	// Every is how often a background goroutine calls Update, until
	// Close; 0 starts none (the caller calls Update).
	Every time.Duration
}

// Adaptive is an in-memory keyed limiter (a [Keyed]) whose limit follows a
// load signal: Update reads the signal and sets the limit it calls for with
// [Keyed.SetLimit], so every key keeps its state across changes. Reading
// the signal is never on the request path: Allow costs what Keyed's does.
//
// The limit is quantised to whole events and whole burst units: between
// the marks, Events is High.Events minus the signal's fraction of the way
// from LowMark to HighMark times (High.Events − Low.Events), rounded to the
// nearest whole number, and Burst likewise; at or beyond the marks it is
// Low or High exactly. A reading that calls for the limit in force changes
// nothing, so a steady signal costs no SetLimit.
//
// An Adaptive is safe for concurrent use. Close stops its background
// sampler, if it has one.
type Adaptive struct {
	k    *Keyed
	c    AdaptiveConfig
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

var _ Limiter = (*Adaptive)(nil)

// NewAdaptive returns an adaptive limiter for c, with the options [New]
// takes, and reads the signal once to set its first limit. It fails, with
// a message saying what to fix, if c or an option is invalid.
func NewAdaptive(c AdaptiveConfig, opts ...Option) (*Adaptive, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	k, err := New(c.High, opts...)
	if err != nil {
		return nil, err
	}
	if err := k.SetLimit(c.Low); err != nil {
		return nil, fmt.Errorf("core: NewAdaptive: Low: %w", err)
	}
	a := &Adaptive{k: k, c: c}
	if _, err := a.Update(); err != nil {
		return nil, err
	}
	if c.Every > 0 {
		a.stop, a.done = make(chan struct{}), make(chan struct{})
		go a.sample()
	}
	return a, nil
}

func (c *AdaptiveConfig) validate() error {
	if err := c.Low.Validate(); err != nil {
		return fmt.Errorf("core: NewAdaptive: Low: %w", err)
	}
	if err := c.High.Validate(); err != nil {
		return fmt.Errorf("core: NewAdaptive: High: %w", err)
	}
	switch {
	case c.Signal == nil:
		return errors.New("core: NewAdaptive: nil Signal; pass a func() float64 reporting the load")
	case !(c.LowMark < c.HighMark) || math.IsInf(c.LowMark, 0) || math.IsInf(c.HighMark, 0):
		return fmt.Errorf("core: NewAdaptive: LowMark %v and HighMark %v must be finite with LowMark < HighMark", c.LowMark, c.HighMark)
	case c.Low.Period != c.High.Period:
		return fmt.Errorf("core: NewAdaptive: Low and High must have the same Period, got %v and %v", c.Low.Period, c.High.Period)
	case c.Low.Name != c.High.Name:
		return fmt.Errorf("core: NewAdaptive: Low and High must have the same Name, got %q and %q", c.Low.Name, c.High.Name)
	case c.Low.Algorithm != c.High.Algorithm || rateless(c.Low) != rateless(c.High):
		return fmt.Errorf("core: NewAdaptive: Low (%s) and High (%s) must differ only in Events and Burst: the same algorithm and settings", c.Low, c.High)
	case c.Low.Events > c.High.Events || c.Low.EffectiveBurst() > c.High.EffectiveBurst():
		return fmt.Errorf("core: NewAdaptive: Low (%s) must not allow more than High (%s): the low limit is the one for heavy load", c.Low, c.High)
	case c.Every < 0:
		return fmt.Errorf("core: NewAdaptive: Every must be >= 0 (0: no background sampler), got %v", c.Every)
	}
	return nil
}

// LimitAt returns the limit the signal reading s calls for.
func (c *AdaptiveConfig) LimitAt(s float64) Limit {
	switch {
	case s != s || s >= c.HighMark:
		return c.Low
	case s <= c.LowMark:
		return c.High
	}
	f := (s - c.LowMark) / (c.HighMark - c.LowMark)
	step := func(hi, lo int) int { return hi - int(math.Round(f*float64(hi-lo))) }
	l := c.High
	l.Events, l.Burst = step(c.High.Events, c.Low.Events), step(c.High.EffectiveBurst(), c.Low.EffectiveBurst())
	return l
}

// rateless is l without its rate: what Low and High share.
func rateless(l Limit) Limit {
	l.Events, l.Burst = 0, 0
	return l
}

// Update reads the signal now and sets the limit it calls for, which it
// returns. Tests call it directly; the background sampler calls it every
// interval. On error (an intermediate limit the algorithm's options do not
// fit) the limit in force stays.
func (a *Adaptive) Update() (Limit, error) {
	l := a.c.LimitAt(a.c.Signal())
	if l == a.k.Limit() {
		return l, nil
	}
	if err := a.k.SetLimit(l); err != nil {
		return a.k.Limit(), err
	}
	return l, nil
}

func (a *Adaptive) sample() {
	defer close(a.done)
	t := time.NewTicker(a.c.Every)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
			a.Update() // an error keeps the limit in force; see Update
		}
	}
}

// Close stops the background sampler and waits for it to end; after Close
// returns, the signal is no longer read (except by an explicit Update). It
// is idempotent, and the limiter keeps deciding under its last limit.
func (a *Adaptive) Close() error {
	if a.stop != nil {
		a.once.Do(func() {
			close(a.stop)
			<-a.done
		})
	}
	return nil
}

// Allow decides as [Keyed.Allow] does, under the limit in force.
func (a *Adaptive) Allow(ctx context.Context, key string, cost int) (Decision, error) {
	return a.k.Allow(ctx, key, cost)
}

// Refund gives units back as [Keyed.Refund] does.
func (a *Adaptive) Refund(ctx context.Context, key string, cost int) error {
	return a.k.Refund(ctx, key, cost)
}

// Limit returns the limit in force.
func (a *Adaptive) Limit() Limit { return a.k.Limit() }
