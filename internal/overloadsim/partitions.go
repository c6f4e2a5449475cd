package overloadsim

import (
	"math"
	"time"

	"github.com/floodgate/floodgate/overload"
)

// partitioned is Netflix's AbstractPartitionedLimiter
// (limiter/AbstractPartitionedLimiter.java) around Gradient2Limit: each
// partition gets ceil(share × L) in flight (at least 1), enforced only
// while the limiter is at its limit, so that a partition may burst into
// spare capacity; a priority with no partition gets the unknown
// partition's share, 0 (so 1 in flight over the limit).
type partitioned struct {
	netflix
	share map[overload.Priority]float64
	busy  map[overload.Priority]int
}

// NewPartitions is Gradient2 with priority partitions as the README's
// example splits them (90 % live, 10 % batch): Critical 90 %, Normal 10 %.
func NewPartitions(env *Env) (Controller, error) {
	g, _ := NewGradient2(env)
	return &partitioned{
		netflix: *g.(*netflix),
		share:   map[overload.Priority]float64{overload.Critical: 0.9, overload.Normal: 0.1},
		busy:    map[overload.Priority]int{},
	}, nil
}

func (p *partitioned) Admit(_ int64, r *Request) bool {
	l := int(p.limit)
	if p.inflight >= l {
		part := max(1, int(math.Ceil(float64(l)*p.share[r.Priority])))
		if p.busy[r.Priority] >= part {
			return false
		}
	}
	p.busy[r.Priority]++
	p.inflight++
	r.Tag = int64(p.inflight)
	return true
}

func (p *partitioned) Done(now int64, r *Request, latency time.Duration, dropped bool) {
	p.busy[r.Priority]--
	p.netflix.Done(now, r, latency, dropped)
}
