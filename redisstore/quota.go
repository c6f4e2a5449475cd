package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/floodgate/floodgate/core"
)

// Local quota: a key that is hot on this instance is decided in memory from
// a lease, a batch of units that one script charged to the key's shared
// state as admissions (op 'g'). The instance spends them until they run
// out or the lease ends, and gives back what it did not spend (a refund;
// for a fixed window only into the window it was taken from). A key that
// is not hot keeps one round trip per decision.
//
// The bound: a unit is spent only after the script charged it, never more
// than L (the lease's length) after the call that took it was sent, and a
// spent unit is never given back. A grant ahead (op 'G', a GCRA's or token
// bucket's grant that finds nothing fits now) charges units due within
// L/2: they are spent from when they are due, as measured from the reply,
// and at most L after that, measured from the sending. So the instances together admit no more
// than one shared limiter would have over the same interval widened by L;
// for a fixed window a lease also ends with its window (from the reply,
// counted from before the call was sent), so no window admits more than
// its limit. An instance that dies holding units loses them; they were
// charged as admissions, which is all the state remembers of them. A
// Dynamic's lease is bound to its limit: quota_change.go says what
// becomes of it when the key's limit changes.
//
// What is approximate: Remaining and ResetAfter of a local decision (the
// shared state's as the grant saw it, plus the units still held), and
// RetryAfter of a local refusal (the shared state's at the last grant, or
// the wait before this instance asks again). While units sit in leases
// elsewhere, or wait to be given back, the fleet admits less than a
// shared limiter would.

// LocalQuota configures [WithLocalQuota]. The zero LocalQuota takes the
// default of every field.
type LocalQuota struct {
	// Length is the longest a lease lives, counted from when the call
	// that took it was sent: the L of the bound [WithLocalQuota] states.
	// 0: a tenth of the limit's period, at most 1 s (a stack's: of its
	// shortest period; a Dynamic's: of the period of the limit the lease
	// is granted under). At most 1 m.
	Length time.Duration
	// Hot is how many calls for one key within one Length make the key
	// hot on this instance, and so leased. 0: 8.
	Hot int
	// MaxKeys bounds the keys this instance follows; a key beyond them is
	// decided in Redis, call by call. 0: 4096.
	MaxKeys int
}

const (
	defaultQuotaHot  = 8
	defaultQuotaKeys = 4096
	// quotaFill is how much more than the key's recent demand over one
	// length a lease asks for.
	quotaFill = 1.25
)

// quotas is a Limiter's local quota: the keys it follows, in shards.
type quotas struct {
	length int64 // LocalQuota.Length in ns; 0: each limit's default
	hot    int64
	keys   int
	id     string // this instance's, in the key's holders (quota.lua)
	shards [16]quotaShard
	giving sync.WaitGroup // returns and asks in the background under way
	seed   maphash.Seed   // picks a key's shard
	// policyOf is a Dynamic's policy for a key's limit now; nil for a
	// Limiter's or a Stack's, whose limit never changes.
	policyOf func(key string) (*policy, error)
}

// leaseTerms are one limit's leases: their length L and the policy of
// grants, the limit's arguments followed by this instance's id and the
// length (quota.lua).
type leaseTerms struct {
	length int64 // ns
	grant  *policy
}

// holdersSuffix ends the Redis key, in the state key's hash slot, that
// lists the instances holding a lease on the key (quota.lua).
const holdersSuffix = ":holders"

type quotaShard struct {
	mu sync.RWMutex // read-locked to find a key, locked to add or drop one
	m  map[string]*quota
}

// quota is one key's lease and demand.
type quota struct {
	mu      sync.Mutex
	units   int64  // unspent units of the lease in force
	granted int64  // the units it was granted
	end     int64  // the process-clock instant the lease ends; 0: none
	start   int64  // the instant its units are due (a grant ahead's); 0: at once
	gs      int64  // the server's instant of the grant (seconds, ns), which a
	gn      int64  // fixed window's return names
	gen     uint64 // counts leases, so that a late timer returns nothing twice
	// The shared state as the last grant saw it, and when it was sent.
	remaining, reset, sent int64
	// asking is closed when the grant in flight ends; nil when none is.
	asking chan struct{}
	// ahead: a grant is set to be asked for when the wait ends (askAhead).
	ahead bool
	// wait is the instant before which a refused key does not ask again.
	wait int64
	// full is the end of the fixed window a grant found full (process
	// clock; 0: none), until which that window's count may only come back
	// by returns, never by more than half the limit (see lease).
	full int64
	// Demand: decisions seen since from, and the rate over the last
	// full length (per ns).
	seen, from int64
	rate       float64
	last       int64      // the last decision, for eviction
	span       int64      // the lease length of the last decision's limit
	holders    int64      // instances holding a lease on the key, at the last grant
	short      bool       // the last grant found no unit fit now (see aheadShare)
	limit      core.Limit // the limit the last grant named (a stack's layer)
	// pol is the policy the last grant was made under: the lease in
	// force, and a refusal's wait, hold under its limit only.
	pol *policy
}

// quotaAlgorithm says whether alg (with overdraft) can be leased, and why
// not.
func quotaAlgorithm(alg core.Algorithm, overdraft bool) error {
	switch {
	case overdraft:
		return fmt.Errorf("redisstore: local quota cannot lend (WithOverdraft): a lease holds units already charged, and lending admits what was never charged")
	case alg == core.GCRA, alg == core.TokenBucket, alg == core.FixedWindow:
		return nil
	}
	return fmt.Errorf("redisstore: local quota leases GCRA, TokenBucket and FixedWindow limits, not %v: the others' admissions cannot be charged ahead of time as a batch of units", alg)
}

// newQuotas returns the local quota c, and sets the lease terms of p, the
// policy of limit l (a stack's: the layer of the shortest period), unless
// p is nil (a Dynamic's: each policy gets its own).
func newQuotas(c LocalQuota, l core.Limit, p *policy) *quotas {
	q := &quotas{length: int64(c.Length), hot: int64(c.Hot), keys: c.MaxKeys}
	if q.hot == 0 {
		q.hot = defaultQuotaHot
	}
	if q.keys == 0 {
		q.keys = defaultQuotaKeys
	}
	q.seed = maphash.MakeSeed()
	for i := range q.shards {
		q.shards[i].m = map[string]*quota{}
	}
	var id [8]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	q.id = hex.EncodeToString(id[:])
	if p != nil {
		p.lease = q.terms(l, p)
	}
	return q
}

// terms returns the terms of leases under p, whose limit is l (a stack's:
// the layer of the shortest period): LocalQuota.Length, or a tenth of l's
// period, at most 1 s; at least 1 ms.
func (qs *quotas) terms(l core.Limit, p *policy) *leaseTerms {
	t := &leaseTerms{length: int64(leaseLength(time.Duration(qs.length), l))}
	t.grant = &policy{limit: p.limit, maxCost: p.maxCost,
		fixed: append(p.fixed[:len(p.fixed):len(p.fixed)], qs.id, strconv.FormatInt(t.length, 10))}
	return t
}

// get returns key's quota, made if there is room (nil if not).
func (qs *quotas) get(key string, now int64) *quota {
	sh := &qs.shards[maphash.String(qs.seed, key)%uint64(len(qs.shards))]
	sh.mu.RLock()
	q := sh.m[key]
	sh.mu.RUnlock()
	if q != nil {
		return q // a hot key's calls never wait for each other here
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if q := sh.m[key]; q != nil {
		return q
	}
	if len(sh.m) >= (qs.keys+len(qs.shards)-1)/len(qs.shards) && !sh.prune(now) {
		return nil
	}
	q = &quota{from: now}
	sh.m[key] = q
	return q
}

// prune drops the keys idle for two lease lengths that hold no units, and
// reports whether it dropped any.
func (sh *quotaShard) prune(now int64) bool {
	n := len(sh.m)
	for k, q := range sh.m {
		q.mu.Lock()
		idle := q.units == 0 && q.asking == nil && now-q.last > 2*q.span
		q.mu.Unlock()
		if idle {
			delete(sh.m, k)
		}
	}
	return len(sh.m) < n
}

// see counts one decision at now and reports whether the key is hot: at
// least hot decisions within the last length.
func (q *quota) see(now, length, hot int64) bool {
	q.last, q.span = now, length
	if now-q.from >= length {
		q.rate = float64(q.seen) / float64(max(now-q.from, 1))
		q.seen, q.from = 0, now
	}
	q.seen++
	return q.seen >= hot || q.rate*float64(length) >= float64(hot)
}

// size is how many units a lease asks for: the demand over one length and
// a quarter more, at least cost, at most the burst's even share of half
// among the instances that held a lease at the last grant.
func (q *quota) size(length int64, cost int, burst int) int {
	r := max(q.rate, float64(q.seen)/float64(max(q.last-q.from, length)))
	n := int(min(math.Ceil(quotaFill*r*float64(length)), float64(math.MaxInt32)))
	return max(cost, min(n, max(1, burst/int(2*max(q.holders, 1)))))
}

// returnPolicy is p for a lease's return: the grant's instant follows a
// fixed window's parameters, so that the refund reaches the window the
// lease was granted in only. A stack's arguments hold each layer's
// parameters after their count (stack.lua): a fixed-window layer's get
// the instant, and their count grows by two.
func (l *Limiter) returnPolicy(p *policy, gs, gn int64) *policy {
	s, n := strconv.FormatInt(gs, 10), strconv.FormatInt(gn, 10)
	if l.layers == nil {
		if l.alg != core.FixedWindow {
			return p
		}
		fixed := append(p.fixed[:len(p.fixed):len(p.fixed)], s, n)
		return &policy{limit: p.limit, maxCost: p.maxCost, fixed: fixed}
	}
	fixed := append(make([]any, 0, len(p.fixed)+2*len(l.limits)), p.fixed[0]) // the TTL margin
	at := 1
	for _, lim := range l.limits {
		c, _ := strconv.Atoi(p.fixed[at].(string))
		params := p.fixed[at+1 : at+1+c]
		at += 1 + c
		if lim.Algorithm == core.FixedWindow {
			fixed = append(fixed, strconv.Itoa(c+2))
			fixed = append(append(fixed, params...), s, n)
			continue
		}
		fixed = append(append(fixed, p.fixed[at-1-c]), params...)
	}
	return &policy{limit: p.limit, maxCost: p.maxCost, fixed: fixed}
}

// giveBack returns units of key's lease to the shared state, in the
// background: the caller does not wait for it. A return that fails loses
// the units, which only ever admits less.
func (l *Limiter) giveBack(p *policy, key string, units, gs, gn int64) {
	rp := l.returnPolicy(p, gs, gn)
	l.quota.giving.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), max(l.timeout, time.Second))
		defer cancel()
		if _, err := l.call(ctx, rp, "return", 'r', key, int(units), ""); err == nil {
			l.quotaCount.returned.Add(units)
			l.quotaCount.returns.Add(1)
		}
	})
}
