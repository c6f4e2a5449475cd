package core

// leakyBucket shapes: state.a is the instant the key's line drains, when
// the next request's turn comes. A request waits for its turn (its Delay)
// and then holds the line for cost × interval.
//
// Memory per key: the 16-byte state. Instants stay below now + maxDelay +
// burst × interval, both terms at most maxSpan, so no sum overflows.
type leakyBucket struct {
	interval, maxDelay, burst int64
}

func newLeakyBucket(l Limit) (*leakyBucket, error) {
	maxDelay := l.MaxDelay
	if maxDelay == 0 {
		maxDelay = DefaultMaxDelay
	}
	return &leakyBucket{interval: int64(l.Interval()), maxDelay: int64(maxDelay), burst: int64(l.EffectiveBurst())}, nil
}

func (lb *leakyBucket) fresh(now int64) state { return state{a: now} }
func (lb *leakyBucket) maxCost() int64        { return lb.burst }

func (lb *leakyBucket) decide(s state, now, cost int64) (state, verdict) {
	start := max(s.a, now)
	delay := start - now
	if delay > lb.maxDelay {
		return s, verdict{retryAfter: delay - lb.maxDelay, resetAfter: delay}
	}
	next := start + cost*lb.interval
	left := next - now
	var remaining int64 // cost-1 requests whose turn would come within maxDelay
	if left <= lb.maxDelay {
		remaining = (lb.maxDelay-left)/lb.interval + 1
	}
	return state{a: next}, verdict{allowed: true, remaining: remaining, retryAfter: delay, resetAfter: left} // retryAfter: the Delay
}

func (lb *leakyBucket) idleAt(s state) int64         { return s.a }
func (lb *leakyBucket) idle(s state, now int64) bool { return s.a <= now }

// spare: the key's line holds at most half the turns a fresh key may
// take at once (those within maxDelay, and the first), or one turn.
func (lb *leakyBucket) spare(s state, now int64) bool {
	return s.a-now <= spareUnits(lb.maxDelay/lb.interval+1)*lb.interval
}

// refund gives a turn back: the line drains cost intervals sooner, never
// before now.
func (lb *leakyBucket) refund(s state, now, cost int64) (state, bool) {
	if s.a <= now {
		return s, false
	}
	return state{a: max(now, s.a-cost*lb.interval)}, true
}
