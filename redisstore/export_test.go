package redisstore

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
