package overload

import (
	"hash/maphash"
	"sync/atomic"
	"time"
)

// tenantSlots is how many slots the keys (tenants) are hashed into to
// share the service fairly: keys that fall in one slot share its share.
const tenantSlots = 64

// fairness tracks the requests in flight per tenant slot, for Allow.
//
// Once the service is more than 3/4 full for a request's priority (its
// threshold), a tenant may hold at most its fair share of that
// threshold, ceil(threshold / tenants in flight), counting itself: a
// tenant that floods the service is refused before the others, which
// keep what they ask for up to their share. Below 3/4, or for Critical
// requests, tenants are not told apart. The check and the admission are
// not one atomic step, so the shares are approximate, never the limit.
type fairness struct {
	seed   maphash.Seed
	slots  [tenantSlots]atomic.Int64 // slots held per tenant slot
	active atomic.Int64              // tenant slots holding any
}

// slotOf is key's tenant slot, plus one (0 means none, as in the zero
// Token).
func (f *fairness) slotOf(key string) uint8 {
	return uint8(maphash.String(f.seed, key)%tenantSlots) + 1
}

// share is the most the tenant in slot may hold when the service holds
// n of threshold t: t itself below 3/4 of t, else its fair share.
func (f *fairness) share(slot uint8, n, t int64) (held, share int64) {
	held = f.slots[slot-1].Load()
	if 4*n < 3*t {
		return held, t
	}
	tenants := f.active.Load()
	if held == 0 {
		tenants++ // the newcomer counts itself
	}
	tenants = max(tenants, 1)
	return held, (t + tenants - 1) / tenants
}

func (f *fairness) take(slot uint8, c int64) {
	if f.slots[slot-1].Add(c) == c {
		f.active.Add(1)
	}
}

func (f *fairness) give(slot uint8, c int64) {
	s := &f.slots[slot-1]
	for {
		held := s.Load()
		left := max(0, held-c)
		if s.CompareAndSwap(held, left) {
			if held > 0 && left == 0 {
				f.active.Add(-1)
			}
			return
		}
	}
}

// fairWait is the RetryAfter of a tenant refused its share: it lacks
// held + c − share of its own slots, which its own requests free at
// held per latency.
func fairWait(r time.Duration, held, c, share int64) time.Duration {
	if held <= 0 {
		return max(r, time.Millisecond)
	}
	return max(time.Duration(float64(r)*float64(held+c-share)/float64(held)), time.Millisecond)
}
