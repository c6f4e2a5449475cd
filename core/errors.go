package core

import (
	"errors"
	"fmt"
)

// The errors below classify every way a check can end without a decision.
// Adapters answer each class the same way on every transport (see the
// package documentation of httpmw and grpcmw for the answers), and tell
// them apart with errors.Is. Client faults and server faults are kept
// apart: a request that carries no usable key or an impossible cost is the
// client's to fix (HTTP 4xx, gRPC InvalidArgument); a key or cost function
// that fails, or a store that cannot answer, is the server's.

// ErrInvalidCost is wrapped by the error for a cost that is not a whole
// number >= 1 or that exceeds what the limit can ever admit at once. Such a
// request charges nothing; adapters answer it as a client error, never as a
// rate-limit denial.
var ErrInvalidCost = errors.New("core: invalid cost")

// ErrCostTooLarge wraps ErrInvalidCost: the cost is more than the limit can
// ever admit at once, so no wait would help (HTTP answers 413).
var ErrCostTooLarge = fmt.Errorf("%w: more than the limit can ever admit at once", ErrInvalidCost)

// ErrClockRange is wrapped by the error an in-memory limiter returns when
// its clock reads outside the range it accepts, 0 to 2⁶²−1 ns since the Unix
// epoch (1970 to 2116): no decision is made and nothing is charged. It is a
// server fault (a broken or misconfigured Clock), never a denial.
var ErrClockRange = errors.New("core: clock out of range")

// ErrStore is matched (errors.Is) by every error a store returns when it
// could not reach or update its state. The configured [FailureMode] decides
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
	// ErrKey: the key function failed or returned an empty key. Unless the
	// error also matches ErrBadKey, the failure is the server's (a bug, a
	// misconfiguration, a transport without an IP peer).
	ErrKey = errors.New("core: key function failed")
	// ErrBadKey: the request carries no usable key (a missing API-key
	// header, a malformed proxy header): the client's fault. Key functions
	// wrap it; package keyfunc's ErrNoKey and ErrInvalidHeader do.
	ErrBadKey = errors.New("core: request carries no usable key")
	// ErrKeyTooLarge wraps ErrBadKey: the request's key material is larger
	// than a key function is willing to read (HTTP answers 431).
	ErrKeyTooLarge = fmt.Errorf("%w: key material too large", ErrBadKey)
	// ErrEmptyKey: the key function returned "" with no error. An empty key
	// is never "unlimited": key functions derive keys from the request, so
	// an empty one means the request carried nothing to key on, and it is
	// answered as ErrBadKey.
	ErrEmptyKey = fmt.Errorf("%w: %w: empty key", ErrKey, ErrBadKey)
	// ErrCost: the cost function failed, or returned a negative cost (a
	// bug: the server's fault). When its error also wraps ErrInvalidCost,
	// the request is at fault rather than the server.
	ErrCost = errors.New("core: cost function failed")
	// ErrWaitCanceled: a shaped request's context ended while it waited for
	// its turn; its units were refunded.
	ErrWaitCanceled = errors.New("core: request ended while waiting for its turn")
)
