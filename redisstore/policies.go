package redisstore

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/floodgate/floodgate/core"
)

// policy is one limit's part of a call: the limit, the largest cost it
// admits and the script's arguments that never change (ARGV[3...]), made
// once, its local quota leases' terms (nil without WithLocalQuota), and,
// for a token bucket alone, the bucket that reads its admissions' replies.
// A Limiter has one; a Dynamic one per limit.
type policy struct {
	limit   core.Limit
	maxCost int
	fixed   []any
	lease   *leaseTerms
	bucket  *bucket
}

// newPolicy returns l's policy on lim, whose script takes params for it.
func (lim *Limiter) newPolicy(l core.Limit, maxCost int, params []string) *policy {
	fixed := fixedArgs(lim.opts.margin, params)
	if lim.leases != nil {
		fixed = append(fixed, strconv.FormatInt(lim.leases.ttl.Microseconds(), 10))
	}
	p := &policy{limit: l, maxCost: maxCost, fixed: fixed}
	if lim.opts.algorithm == core.TokenBucket {
		p.bucket = newBucket(l, lim.opts.overdraft)
	}
	return p
}

// settingsTag is what the algorithm's settings add to keys, so that two
// Limiters with different settings never read each other's state: the
// longest wait of a leaky bucket, the warm-up period and cold factor, or
// that a token bucket lends. Defaults are written out, so a default and
// the same value set explicitly share state.
func (o *options) settingsTag() string {
	switch {
	case o.algorithm == core.LeakyBucket:
		return ":" + strconv.FormatInt(int64(o.leakyMaxDelay()), 10)
	case o.algorithm == core.WarmUp:
		return ":" + strconv.FormatInt(int64(o.warmUp), 10) + "x" + ftoa(o.warmColdFactor())
	case o.overdraft:
		return ":overdraft"
	}
	return ""
}

func (o *options) leakyMaxDelay() time.Duration {
	if o.maxDelay == 0 {
		return core.DefaultMaxDelay
	}
	return o.maxDelay
}

func (o *options) warmColdFactor() float64 {
	if o.coldFactor == 0 {
		return core.DefaultColdFactor
	}
	return o.coldFactor
}

// leakyParams returns the leaky bucket's script parameters: the interval
// and the longest wait, in ns. The line drains at most the longest wait
// plus Burst × interval after now, which must fit in a Redis span.
func leakyParams(l core.Limit, o *options) ([]string, int, error) {
	d := o.leakyMaxDelay()
	// Limit.Validate keeps the product far from overflowing, and d is
	// checked alone first so that the sum cannot overflow either.
	hold := l.Interval() * time.Duration(l.EffectiveBurst())
	if d > maxSpan || hold+d > maxSpan {
		return nil, 0, fmt.Errorf("redisstore: LeakyBucket with limit %s and WithMaxDelay(%v): the longest wait plus Burst × interval (%v) is %v; on Redis it may be at most %v (%s), since Lua numbers are doubles: shorten the wait, the period or the burst",
			l, d, hold, hold+min(d, maxSpan), maxSpan, "about 52 days")
	}
	// The lead (last): the line drains at most hold+d after now.
	return []string{strconv.FormatInt(int64(l.Interval()), 10), strconv.FormatInt(int64(d), 10), strconv.FormatInt(int64(hold+d), 10)}, l.EffectiveBurst(), nil
}

// warmUpParams returns the warm-up script's parameters, computed as core's
// newWarmUp computes its fields, operation for operation, so that the
// script gets the very doubles the in-memory limiter uses: the stable
// interval, the threshold, the most permits stored, the slope and the
// cool-down interval. A key's next free instant is at most a cold request
// of the whole burst after now, and it cools back to whole within the
// warm-up period after that: both must fit in a Redis span.
func warmUpParams(l core.Limit, o *options) ([]string, int, error) {
	burst := l.EffectiveBurst()
	coldFactor := o.warmColdFactor()
	stable := float64(l.Period) / float64(l.Events)
	cold := stable * coldFactor
	warm := float64(o.warmUp)
	threshold := 0.5 * warm / stable
	maxPermits := threshold + 2*warm/(stable+cold)
	slope := (cold - stable) / (maxPermits - threshold)
	coolDown := warm / maxPermits
	if cold*float64(burst)+warm > float64(maxSpan) {
		return nil, 0, fmt.Errorf("redisstore: WarmUp with limit %s and WithWarmUp(%v, %v): a cold request of the whole burst waits %v, and the key cools back within %v after it; on Redis the two may add up to at most %v (%s), since Lua numbers are doubles: lower the burst, the cold factor or the warm-up period",
			l, o.warmUp, coldFactor, time.Duration(min(cold*float64(burst), float64(1<<62))), o.warmUp, maxSpan, "about 52 days")
	}
	// The lead (last): a next free instant is at most a cold request of the
	// whole burst after now (core's waits are truncated, never rounded up).
	lead := strconv.FormatInt(int64(math.Ceil(cold*float64(burst))), 10)
	return []string{ftoa(stable), ftoa(threshold), ftoa(maxPermits), ftoa(slope), ftoa(coolDown), lead}, burst, nil
}
