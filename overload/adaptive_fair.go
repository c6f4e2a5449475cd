package overload

import (
	"hash/maphash"
	"sync/atomic"
	"time"
)

// tenantSlots is how many (tenant, class) pairs can hold slots at once
// and be told apart; tenantProbes is how many entries a key may look
// at from its home entry. A key that finds none free is admitted by its
// threshold alone: a tenant that holds slots keeps its entry, so a
// heavy tenant is always capped, and one among more than tenantSlots
// small ones in flight holds little anyway.
const (
	tenantSlots  = 128
	tenantProbes = 8
)

// An entry's word packs the tenant's tag above the slots it holds: the
// entry is free when it holds none, whatever its tag.
const (
	heldBits = 24
	heldMask = 1<<heldBits - 1
	// fairMax bounds the thresholds under which tenants are tracked, so
	// that no entry's count can reach its tag.
	fairMax = 1 << (heldBits - 2)
)

// tenant is a key's 64-bit hash, never 0; 0 is no tenant (Acquire).
type tenant uint64

// fairness tracks the slots each tenant holds per admission class below
// Critical, for Allow.
//
// Once a class holds more than 3/4 of its threshold (counting the
// classes above it), a tenant may hold at most its fair share of the
// room the classes above leave it, ceil((threshold − held above) /
// tenants of the class in flight), counting itself: a tenant that floods
// the service is refused before the others, which keep what they ask
// for up to their share. Critical requests are not told apart. The
// check and the admission are not one atomic step, so the shares are
// approximate, never the limit.
//
// Tenants are told apart by a 40-bit tag of their key's hash in an
// open-addressed table of tenantSlots entries, claimed by the first
// admission and free again once the tenant holds none: unlike slots
// hashed by key alone, two tenants never share a share.
type fairness struct {
	seed   maphash.Seed
	tab    [tenantSlots]atomic.Uint64 // tag<<heldBits | slots held
	active [rankCritical]atomic.Int64 // entries holding any, by rank
}

// slotOf is key's tenant.
func (f *fairness) slotOf(key string) tenant {
	return tenant(maphash.String(f.seed, key) | 1)
}

// tagOf is the tag of tenant t's entry for rank r: distinct per rank,
// never 0.
func tagOf(t tenant, r int) uint64 {
	x := uint64(t) + uint64(r)*0x9e3779b97f4a7c15
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	return max(x>>heldBits, 1)
}

// find is the entry holding slots for tag and what it holds, or -1.
func (f *fairness) find(tag uint64) (int, int64) {
	for i := range tenantProbes {
		j := (tag + uint64(i)) % tenantSlots
		if w := f.tab[j].Load(); w>>heldBits == tag && w&heldMask != 0 {
			return int(j), int64(w & heldMask)
		}
	}
	return -1, 0
}

// share is what tag's tenant holds and the most it may hold after an
// admission that brings its rank and those above to n of threshold t,
// the ranks above holding above.
func (f *fairness) share(tag uint64, r int, n, t, above int64) (held, share int64) {
	if 4*n < 3*t {
		return 0, t // held is not needed, and not looked up
	}
	_, held = f.find(tag)
	tenants := f.active[r].Load()
	if held == 0 {
		tenants++ // the newcomer counts itself
	}
	room := max(t-above, 1)
	tenants = max(tenants, 1)
	return held, (room + tenants - 1) / tenants
}

// take adds c slots to tag's entry of rank r, claiming the first free
// one near its home if it has none, and returns its index plus one (0:
// none was free). An entry another admission changed first is looked
// at again.
func (f *fairness) take(tag uint64, r int, c int64) uint8 {
retry:
	for range tenantProbes {
		free, was := -1, uint64(0)
		for i := range tenantProbes {
			j := int((tag + uint64(i)) % tenantSlots)
			w := f.tab[j].Load()
			switch {
			case w&heldMask == 0:
				if free < 0 {
					free, was = j, w
				}
			case w>>heldBits == tag:
				if f.tab[j].CompareAndSwap(w, w+uint64(c)) {
					return uint8(j + 1)
				}
				continue retry
			}
		}
		if free < 0 {
			return 0
		}
		if f.tab[free].CompareAndSwap(was, tag<<heldBits|uint64(c)) {
			f.active[r].Add(1)
			return uint8(free + 1)
		}
	}
	return 0
}

// give takes back the c slots a Token of rank r took in entry slot (an
// index plus one).
func (f *fairness) give(slot uint8, r int, c int64) {
	if f.tab[slot-1].Add(-uint64(c))&heldMask == 0 {
		f.active[r].Add(-1)
	}
}

// refund takes c slots from entry slot of rank r, not below none.
func (f *fairness) refund(slot uint8, r int, c int64) {
	e := &f.tab[slot-1]
	for {
		w := e.Load()
		held := int64(w & heldMask)
		left := max(0, held-c)
		if e.CompareAndSwap(w, w&^heldMask|uint64(left)) {
			if held > 0 && left == 0 {
				f.active[r].Add(-1)
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
