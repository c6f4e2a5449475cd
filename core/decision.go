package core

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Decision is what one check concluded. Adapters write headers and gRPC
// details from a Decision only, so every adapter answers alike.
type Decision struct {
	// Allowed reports whether the request was admitted and its cost charged.
	Allowed bool
	// Limit is the policy that decided: for stacked limits, the one that
	// denied, or the one with the least left.
	Limit Limit
	// Remaining is what can be spent right now: exactly Remaining more cost-1
	// requests at the same instant would be admitted, and the next would not.
	Remaining int
	// ResetAfter is the wait, with no further traffic, until the key's quota
	// is whole again.
	ResetAfter time.Duration
	// RetryAfter is zero when Allowed. When denied it is > 0 and exact:
	// retrying the same cost after exactly RetryAfter, with no other traffic,
	// is admitted.
	RetryAfter time.Duration
	// Delay is non-zero only for shaping limiters: the request is admitted
	// (its units are reserved) but must wait Delay before it proceeds.
	Delay time.Duration
}

// Limiter decides whether a key may spend cost units now. It is the one
// interface the adapters use; implementations are safe for concurrent use.
//
// Allow returns an error only when no decision could be made: an invalid
// request (errors.Is(err, ErrInvalidCost)), which charges nothing, or a store
// failure (errors.Is(err, ErrStore)). A denial is a Decision with Allowed
// false and a nil error.
//
// Refund gives back cost units that an earlier allowed Allow charged to key,
// for work that was reserved but not done (a cancelled shaped request, a
// stacked limit that another limit denied). Quota never rises above full.
type Limiter interface {
	Allow(ctx context.Context, key string, cost int) (Decision, error)
	Refund(ctx context.Context, key string, cost int) error
}

// ErrInvalidCost is wrapped by the error for a cost that is not a whole
// number >= 1 or that exceeds what the limit can ever admit at once. Such a
// request charges nothing; adapters answer it as a client or configuration
// error, never as a rate-limit denial.
var ErrInvalidCost = errors.New("core: invalid cost")

// ErrStore is matched (errors.Is) by every error a store returns when it
// could not reach or update its state. The configured failure mode decides
// what such a request gets.
var ErrStore = errors.New("core: store failure")

// StoreError wraps a store's failure so that errors.Is(err, ErrStore) holds
// while the cause stays reachable with errors.Unwrap or errors.As.
type StoreError struct {
	Op  string // what the store was doing, e.g. "allow"
	Err error  // the cause
}

// Error implements error.
func (e *StoreError) Error() string { return "core: store " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *StoreError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrStore) true for every StoreError.
func (e *StoreError) Is(target error) bool { return target == ErrStore }

// Errors every adapter hands to its error handler besides a Limiter's own
// (ErrInvalidCost, ErrStore). Each is wrapped together with its cause, for
// logs; adapters never send the text to the client.
var (
	// ErrKey: the key function failed or returned an empty key.
	ErrKey = errors.New("core: key function failed")
	// ErrEmptyKey: the key function returned "". An empty key is never
	// "unlimited"; it is an error like any other key failure.
	ErrEmptyKey = fmt.Errorf("%w: empty key", ErrKey)
	// ErrCost: the cost function failed. When its error also wraps
	// ErrInvalidCost, the request is at fault rather than the server.
	ErrCost = errors.New("core: cost function failed")
	// ErrWaitCanceled: a shaped request's context ended while it waited for
	// its turn; its units were refunded.
	ErrWaitCanceled = errors.New("core: request ended while waiting for its turn")
)
