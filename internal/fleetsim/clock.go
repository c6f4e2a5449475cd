package fleetsim

import (
	"container/heap"
	"time"
)

// event is one thing that happens at a virtual instant. seq breaks ties in
// the order the events were scheduled, so a run never depends on how the
// heap happens to order equal instants.
type event struct {
	at  time.Duration
	seq uint64
	fn  func()
}

type queue []event

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *queue) Pop() any {
	old := *q
	n := len(old)
	e := old[n-1]
	old[n-1] = event{}
	*q = old[:n-1]
	return e
}

// clock is the virtual clock and its event queue: time moves only from
// one event to the next, and nothing runs concurrently.
type clock struct {
	now time.Duration
	seq uint64
	q   queue
}

// after schedules fn d after now.
func (c *clock) after(d time.Duration, fn func()) { c.at(c.now+d, fn) }

// at schedules fn at the instant t (never before now).
func (c *clock) at(t time.Duration, fn func()) {
	if t < c.now {
		t = c.now
	}
	c.seq++
	heap.Push(&c.q, event{at: t, seq: c.seq, fn: fn})
}

// run runs events in order until the queue is empty or the next event is
// at or after until.
func (c *clock) run(until time.Duration) {
	for len(c.q) > 0 {
		if c.q[0].at >= until {
			return
		}
		e := heap.Pop(&c.q).(event)
		c.now = e.at
		e.fn()
	}
}
