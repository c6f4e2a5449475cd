package redisstore

import "time"

// Waiting returns how many of l's calls wait for a round trip to its
// server (not a Cluster's).
func Waiting(l *Limiter) int {
	q := l.one.q
	if q == nil {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiting)
}

// Idle reports whether none of l's round trips to its server (not a
// Cluster's) is under way: a batch's answers reach their callers before
// the goroutine that sent it gives its slot back.
func Idle(l *Limiter) bool {
	q := l.one.q
	if q == nil {
		return true
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.inFlight == 0 && len(q.waiting) == 0
}

// WithAfterFunc replaces time.AfterFunc for the renewal of concurrency
// leases, so that tests fire renewals when they choose.
func WithAfterFunc(after func(d time.Duration, f func()) (stop func() bool)) Option {
	return func(o *options) { o.after = after }
}
