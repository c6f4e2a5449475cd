package overload

import (
	"sync"
	"sync/atomic"
	"testing"
)

// A prototype for a core.Limiter path with no allocation, which core's
// Decision cannot give today: its Lease is a fresh *core.Lease per
// admission (64 bytes). Three ways to hand out what ends an admission,
// each ending a counter's slot, as Adaptive's Lease ends its Token:
//
//   - fresh: a new 64-byte lease per admission, ended at most once by
//     its done flag (core's Lease today);
//   - pooled: the same lease taken from a sync.Pool and put back when
//     ended: no allocation, but a pointer that outlives its End (a
//     deferred End after an explicit one, which core's contract allows)
//     ends whichever admission holds the lease next
//     (TestProtoLeaseStale);
//   - handle: a value (pointer and generation) to a pooled lease; End
//     moves the lease to the next generation by compare-and-swap, so a
//     stale handle's End does nothing.

// protoLease is laid out as core.Lease (64 bytes).
type protoLease struct {
	done  atomic.Bool
	gen   atomic.Uint32
	held  *atomic.Int64
	units int64
	_     [40]byte
}

var protoPool = sync.Pool{New: func() any { return new(protoLease) }}

// end ends a fresh or pooled lease, once.
func (l *protoLease) end() bool {
	if !l.done.CompareAndSwap(false, true) {
		return false
	}
	l.held.Add(-l.units)
	return true
}

// protoHandle is a value handle on a pooled lease.
type protoHandle struct {
	l   *protoLease
	gen uint32
}

func protoAdmit(held *atomic.Int64) protoHandle {
	l := protoPool.Get().(*protoLease)
	l.held, l.units = held, 1
	held.Add(1)
	return protoHandle{l, l.gen.Load()}
}

// End ends the admission if the handle is of the lease's current
// generation, and puts the lease back.
func (h protoHandle) End() bool {
	if !h.l.gen.CompareAndSwap(h.gen, h.gen+1) {
		return false
	}
	h.l.held.Add(-h.l.units)
	protoPool.Put(h.l)
	return true
}

// TestProtoLeaseStale: request A's lease is ended and put back; the
// same lease serves request B; A's second End (allowed: a Lease ends at
// most once, so adapters may end it on an error path and again in a
// defer) ends B's admission when the lease is a pooled pointer, and does
// nothing when it is a handle.
func TestProtoLeaseStale(t *testing.T) {
	var held atomic.Int64
	l := &protoLease{held: &held, units: 1}
	held.Add(1)
	a := l
	a.end()
	l.done.Store(false) // pooled: reset and handed to B
	held.Add(1)
	if !a.end() || held.Load() != 0 {
		t.Fatalf("pooled: A's stale End did not end B's admission (%d held); the prototype shows nothing", held.Load())
	}

	held.Store(0)
	ha := protoAdmit(&held)
	ha.End()
	hb := protoHandle{ha.l, ha.l.gen.Load()} // the same lease, handed to B
	held.Add(1)
	if ha.End() || held.Load() != 1 {
		t.Fatalf("handle: A's stale End ended B's admission (%d held), want a no-op", held.Load())
	}
	if !hb.End() || held.Load() != 0 {
		t.Fatalf("handle: B's End = false or %d held, want ended, 0", held.Load())
	}
}

// newProtoLease allocates, as core.NewEndingLease does (a lease that
// does not escape would be put on the stack).
//
//go:noinline
func newProtoLease(held *atomic.Int64) *protoLease {
	return &protoLease{held: held, units: 1}
}

func BenchmarkProtoLeaseFresh(b *testing.B) {
	var held atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l := newProtoLease(&held)
			held.Add(1)
			l.end()
		}
	})
}

func BenchmarkProtoLeasePooled(b *testing.B) {
	var held atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l := protoPool.Get().(*protoLease)
			l.done.Store(false)
			l.held, l.units = &held, 1
			held.Add(1)
			l.end()
			protoPool.Put(l)
		}
	})
}

func BenchmarkProtoLeaseHandle(b *testing.B) {
	var held atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			protoAdmit(&held).End()
		}
	})
}
