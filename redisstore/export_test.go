package redisstore

// Waiting returns how many of l's calls wait for a round trip.
func Waiting(l *Limiter) int {
	if l.queue == nil {
		return 0
	}
	l.queue.mu.Lock()
	defer l.queue.mu.Unlock()
	return len(l.queue.waiting)
}
