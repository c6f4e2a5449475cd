package coretest

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/core"
)

// Clock is a core.Clock that stands still until Advance or Set moves it.
// It is safe for concurrent use.
type Clock struct {
	ns atomic.Int64
}

// NewClock returns a Clock reading t.
func NewClock(t time.Time) *Clock {
	c := &Clock{}
	c.ns.Store(t.UnixNano())
	return c
}

// Now returns the clock's time in Unix nanoseconds.
func (c *Clock) Now() int64 { return c.ns.Load() }

// Time returns the clock's time as a time.Time.
func (c *Clock) Time() time.Time { return time.Unix(0, c.ns.Load()) }

// Advance moves the clock forward by d (backward if d is negative).
func (c *Clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }

// StoreDown returns a core.Limiter whose store has failed: every call
// returns a *core.StoreError (so errors.Is(err, core.ErrStore)) with cause
// err, whose text should never reach a client. Every adapter's tests use it
// for the failure modes.
func StoreDown(err error) core.Limiter { return storeDown{err} }

type storeDown struct{ cause error }

func (s storeDown) Allow(context.Context, string, int) (core.Decision, error) {
	return core.Decision{}, &core.StoreError{Op: "allow", Err: s.cause}
}

func (s storeDown) Refund(context.Context, string, int) error {
	return &core.StoreError{Op: "refund", Err: s.cause}
}
