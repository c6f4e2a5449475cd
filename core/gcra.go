package core

// gcra keeps the theoretical arrival time (tat) in state.a: the instant at
// which the key's quota is whole again. Spending cost moves it interval×cost
// ahead; a request fits while tat stays within span of now.
//
// Memory per key: the 16-byte state. Arithmetic stays within int64 because
// Limit.Validate bounds span and the limiter bounds the clock (see
// [ErrClockRange]): tat ≤ now + span, and now + 2×span < 2⁶³.
type gcra struct {
	interval, span, burst int64
}

func (g *gcra) fresh(now int64) state { return state{a: now} }
func (g *gcra) maxCost() int64        { return g.burst }

func (g *gcra) decide(s state, now, cost int64) (state, verdict) {
	tat := max(s.a, now)
	next := tat + cost*g.interval
	if next-now <= g.span {
		return state{a: next}, verdict{allowed: true, remaining: (g.span - (next - now)) / g.interval, resetAfter: next - now}
	}
	return s, verdict{remaining: max(0, g.span-(tat-now)) / g.interval, retryAfter: next - now - g.span, resetAfter: tat - now}
}

func (g *gcra) idleAt(s state) int64         { return s.a }
func (g *gcra) idle(s state, now int64) bool { return s.a <= now }

// spare: the key owes at most half its burst's time, or one interval.
func (g *gcra) spare(s state, now int64) bool {
	return s.a-now <= spareUnits(g.burst)*g.interval
}

func (g *gcra) refund(s state, now, cost int64) (state, bool) {
	if s.a <= now {
		return s, false
	}
	return state{a: max(now, s.a-cost*g.interval)}, true
}
