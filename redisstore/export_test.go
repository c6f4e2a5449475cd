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

// WithAfterFunc replaces time.AfterFunc for the renewal of concurrency
// leases, so that tests fire renewals when they choose.
func WithAfterFunc(after func(d time.Duration, f func()) (stop func() bool)) Option {
	return func(o *options) { o.after = after }
}
