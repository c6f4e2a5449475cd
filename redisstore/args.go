package redisstore

import (
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
)

// fixedArgs returns the script arguments that never change: ARGV[3...],
// but for the TTL margin (ARGV[3]) with WithTTLJitter, which args draws.
func fixedArgs(margin time.Duration, params []string) []any {
	a := []any{strconv.FormatInt(margin.Milliseconds(), 10)}
	for _, p := range params {
		a = append(a, p)
	}
	return a
}

// Script arguments boxed once: converting a string to any allocates.
var (
	argAllow, argRefund  any = "a", "r"
	argGrant, argAhead   any = "g", "G"
	argRelease, argRenew any = "l", "n"
	// A Multi's call of plain fixed windows only (lua/multi.lua).
	argAllowFW, argRefundFW any = "A", "R"
	smallCosts                  = func() (c [65]any) {
		for i := range c {
			c[i] = strconv.Itoa(i)
		}
		return c
	}()
)

// small returns n's text as a script argument, boxed once when small.
func small(n int) any {
	if n >= 0 && n < len(smallCosts) {
		return smallCosts[n]
	}
	return strconv.Itoa(n)
}

// args returns the script's arguments for one call: ARGV[1...]; member,
// a concurrency lease's, goes last. A test clock follows the operation in
// ARGV[1] (lua/common.lua), so that a call on the server's clock sends
// nothing for it.
func (l *Limiter) args(p *policy, code byte, cost int, member string) []any {
	extra := 0
	if l.leases != nil {
		extra = 1
	}
	args := make([]any, 2, 2+len(p.fixed)+extra)
	switch code {
	case 'a':
		args[0] = argAllow
	case 'r':
		args[0] = argRefund
	case 'g':
		args[0] = argGrant
	case 'G':
		args[0] = argAhead
	case 'l':
		args[0] = argRelease
	case 'n':
		args[0] = argRenew
	}
	args[1] = small(cost)
	if l.testNow != nil {
		t := l.testNow.Now()
		args[0] = string(code) + " " + strconv.FormatInt(t/int64(time.Second), 10) + " " + strconv.FormatInt(t%int64(time.Second), 10)
	}
	args = append(args, p.fixed...)
	if len(l.margins) > 1 {
		// WithTTLJitter: ARGV[3], the TTL margin, is drawn per call.
		args[2] = l.margins.pick()
	}
	if l.leases != nil {
		args = append(args, member)
	}
	return args
}

// vals is a script's answer: allowed (0 or 1), remaining, the wait before
// a retry and the wait until the quota is whole, in ns; then a stack's
// layer, the one its decision names; then a grant's units (see quota.go),
// the server's instant in seconds and nanoseconds, the key's holders, and
// the ns until the window the lease must end with ends (-1: none). A token
// bucket's admission alone answers 2 and the tokens it left instead (see
// bucket), which allow turns into the four numbers.
type vals [10]int64

// reply reads the script's numbers from cmd: four, five or ten, or three
// from a token bucket's admission.
func reply(op string, cmd *redis.IntSliceCmd) (vals, error) {
	var out vals
	res, err := cmd.Result()
	if err != nil {
		return out, &core.StoreError{Op: op, Err: err}
	}
	if len(res) != 4 && len(res) != 5 && len(res) != 10 && (len(res) != 3 || res[0] != 2) {
		return out, &core.StoreError{Op: op, Err: fmt.Errorf("redisstore: script answered %d numbers, want 4, 5 or 10", len(res))}
	}
	copy(out[:], res)
	return out, nil
}
