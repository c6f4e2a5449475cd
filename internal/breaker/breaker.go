package breaker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/core"
)

// State is a breaker's state.
type State uint8

// The states.
const (
	// Closed: calls go through; their failures are counted.
	Closed State = iota
	// Open: no call goes through until the open period ends.
	Open
	// HalfOpen: the open period has ended; the next caller probes, and
	// while the probe is out the others are turned away.
	HalfOpen
)

// String returns the state's name.
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// The state lives in one atomic word, so that a call reads it with one
// load and a transition is one compare-and-swap: the low two bits are the
// state and, when Open, the rest is the clock reading at which the open
// period ends (rounded up to a multiple of 4 ns). Probing is HalfOpen with
// the probe taken: only the probe's owner moves the word on from it.
const (
	wordClosed   int64 = 0
	wordOpen     int64 = 1
	wordHalfOpen int64 = 2
	wordProbing  int64 = 3
	stateBits    int64 = 3
)

// Breaker is a lock-free circuit breaker; the package documentation
// describes its states and when it opens. Before each call, a caller asks
// [Breaker.Closed] and, if not, [Breaker.TryProbe]; it reports the outcome
// of a call it made with [Breaker.Success], [Breaker.Failure] or
// [Breaker.Inconclusive]. It is safe for concurrent use. Make one with
// [New].
type Breaker struct {
	word  atomic.Int64
	trips atomic.Int64 // failed probes in a row; doubles the open period

	clock         core.Clock
	minCalls      uint64
	rate          uint64
	openFor       time.Duration
	maxOpenFor    time.Duration
	onFailure     func(error)
	onStateChange func(from, to State)

	failN atomic.Uint64
	opens atomic.Uint64

	// Every success writes the window: on cache lines of its own, so that
	// counting does not evict the word every call reads from other cores.
	_   [64]byte
	win window
}

// New returns a Closed breaker configured by c, or an error if c is
// invalid.
func New(c Config) (*Breaker, error) {
	var errs []error
	for _, p := range c.Problems() {
		errs = append(errs, errors.New("breaker: "+p))
	}
	if c.Clock == nil {
		errs = append(errs, errors.New("breaker: nil clock"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Breaker{
		win:           window{width: int64(c.Window / Buckets)},
		clock:         c.Clock,
		minCalls:      uint64(c.MinCalls),
		rate:          uint64(c.FailureRate),
		openFor:       c.OpenFor,
		maxOpenFor:    c.MaxOpenFor,
		onFailure:     c.OnFailure,
		onStateChange: c.OnStateChange,
	}, nil
}

// Closed reports whether the breaker is Closed, with one atomic load: a
// call may go to the dependency. When it is not, [Breaker.TryProbe] says
// whether the caller gets the probe.
func (b *Breaker) Closed() bool { return b.word.Load() == wordClosed }

// TryProbe reports whether the caller, having found the breaker not
// Closed, now owns the probe: the open period has ended, or an earlier
// probe was handed on, and no other caller took the probe first. Its owner
// must report the probe's outcome (probe true); a probe left unreported
// keeps the breaker from closing for good.
func (b *Breaker) TryProbe() bool {
	w := b.word.Load()
	switch w & stateBits {
	case wordOpen:
		if b.clock.Now() < w&^stateBits || !b.word.CompareAndSwap(w, wordProbing) {
			return false
		}
		b.changed(Open, HalfOpen)
		return true
	case wordHalfOpen:
		return b.word.CompareAndSwap(w, wordProbing)
	}
	return false
}

// State reports the state, seen from the clock's reading now: an Open
// breaker whose period has ended is HalfOpen.
func (b *Breaker) State() State {
	w := b.word.Load()
	switch w & stateBits {
	case wordClosed:
		return Closed
	case wordOpen:
		if b.clock.Now() < w&^stateBits {
			return Open
		}
	}
	return HalfOpen
}

// Failures returns how many failures were reported since b was made.
func (b *Breaker) Failures() uint64 { return b.failN.Load() }

// Opens returns how often b opened, from Closed or after a failed probe.
func (b *Breaker) Opens() uint64 { return b.opens.Load() }

// Success records that the dependency answered: a probe closes the
// breaker and starts the window afresh; any other success is counted in
// the window, with one clock reading and one atomic add, and no lock.
func (b *Breaker) Success(probe bool) {
	if probe {
		b.trips.Store(0)
		b.win.clear() // before closing: no new call lands in the old window
		b.word.Store(wordClosed)
		b.changed(HalfOpen, Closed)
		return
	}
	b.win.succ.Add(b.win.bucket(b.clock.Now()))
}

// Failure records that the dependency failed with err. A failed probe
// opens the breaker again, for twice as long as before. Any other failure
// is counted in the window, and opens a Closed breaker if the window then
// trips either rule of the package documentation.
func (b *Breaker) Failure(err error, probe bool) {
	b.failN.Add(1)
	if b.onFailure != nil {
		b.onFailure(err)
	}
	if probe {
		b.word.Store(b.openWord(b.trips.Add(1)))
		b.opens.Add(1)
		b.changed(HalfOpen, Open)
		return
	}
	n := b.win.bucket(b.clock.Now())
	b.win.fail.Add(n)
	if b.word.Load() == wordClosed && b.win.read(n).trips(b.minCalls, b.rate) &&
		b.word.CompareAndSwap(wordClosed, b.openWord(0)) {
		b.opens.Add(1)
		b.changed(Closed, Open)
	}
}

// Inconclusive records a call whose outcome says nothing about the
// dependency: its caller gave up, or the request was refused for a reason
// of its own. A probe is handed to the next caller. It is also safe to call
// for a probe whose outcome was already reported (from a deferred call
// that guards against panics): it then changes nothing, unless another
// caller has since taken a new probe.
func (b *Breaker) Inconclusive(probe bool) {
	if probe {
		b.word.CompareAndSwap(wordProbing, wordHalfOpen)
	}
}

// openPeriod returns the open period after trips failed probes in a row:
// openFor doubled trips times, at most maxOpenFor.
func (b *Breaker) openPeriod(trips int64) time.Duration {
	d := b.openFor
	for ; trips > 0 && d < b.maxOpenFor; trips-- {
		d *= 2
		if d <= 0 { // overflowed
			return b.maxOpenFor
		}
	}
	return min(d, b.maxOpenFor)
}

// openWord is the word of an Open breaker whose period, after trips failed
// probes, starts now.
func (b *Breaker) openWord(trips int64) int64 {
	now, d := b.clock.Now(), int64(b.openPeriod(trips))
	until := int64(math.MaxInt64)
	if now <= math.MaxInt64-d-stateBits {
		until = now + d + stateBits
	}
	return until&^stateBits | wordOpen
}

func (b *Breaker) changed(from, to State) {
	if b.onStateChange != nil {
		b.onStateChange(from, to)
	}
}

// Bound returns the context a call guarded by a breaker is made with, so
// that a hung dependency costs at most d: ctx itself when it ends within d
// anyway, or d is 0 (no timer, no allocation, and a nil cancel), else a
// context that ends after d, with its cancel function.
func Bound(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return ctx, nil
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return ctx, nil
	}
	return context.WithTimeout(ctx, d)
}
