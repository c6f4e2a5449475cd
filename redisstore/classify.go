package redisstore

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// verdict is what one round trip shows about the server, for its circuit
// breaker. Whatever the verdict, the caller gets the round trip's error,
// as a *core.StoreError, and its failure mode applies.
type verdict uint8

const (
	// noEvidence: the server was not asked, or the outcome was the
	// process's own doing: the caller gave up (its own context ended), the
	// client's pool had no connection free within its PoolTimeout, the
	// client was closed.
	noEvidence verdict = iota
	// answered: the server answered, if only with an error the request
	// itself caused (CROSSSLOT, WRONGTYPE, a script's own error such as
	// "floodgate: malformed state", any other ERR): it is up.
	answered
	// failed: evidence that the server is failing: a network error, a
	// round trip that outlived the timeout on the wire, or an error reply
	// that says the server cannot serve (see unwell).
	failed
)

// unwell starts the error replies of a server that cannot serve now,
// whatever the request: loading its data set, busy with a script, cut off
// from its master or its cluster, mid-resharding, a replica since a
// failover, out of memory, short of replicas, unable to persist, or full.
// The match is made after a leading "ERR ", which some servers add.
var unwell = []string{
	"LOADING ", "BUSY ", "MASTERDOWN ", "CLUSTERDOWN ", "TRYAGAIN ", "READONLY ",
	"OOM ", "NOREPLICAS ", "MISCONF ", "max number of clients reached",
}

// classify says what err, the outcome of a round trip made under wire,
// shows about the server. wire is bounded by the Limiter's timeout from
// when the round trip was sent; caller is the context of the call's
// caller, from which wire derives (a pipeline's caller is the background:
// it serves many callers and none can end it).
func classify(caller, wire context.Context, err error) verdict {
	if err == nil {
		return answered
	}
	var re redis.Error
	if errors.As(err, &re) {
		msg := strings.TrimPrefix(re.Error(), "ERR ")
		for _, p := range unwell {
			if strings.HasPrefix(msg, p) {
				return failed
			}
		}
		return answered
	}
	switch {
	case caller.Err() != nil:
		return noEvidence // the caller gave up, or its deadline came first
	case wire.Err() != nil:
		return failed // the round trip outlived the timeout
	case errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted), errors.Is(err, redis.ErrClosed):
		return noEvidence
	}
	return failed // a network error: refused, reset, closed, timed out
}
