package overloadsim

import (
	"math"
	"time"
)

// bbr is go-kratos/aegis's BBR limiter (ratelimit/bbr/bbr.go, HEAD
// e0742c6) with its defaults: a 10 s window of 100 buckets, CPU threshold
// 800‰. Its CPU is the simulated server's: busy workers / workers over
// each 500 ms, in ‰, capped at 1000, smoothed as aegis's cpuproc does
// (cpu = 0.95 cpu + 0.05 sample, from 0).
//
// Simplified: aegis reads the host's CPU (the whole process, not only
// the served requests), and its window's buckets start when it is built;
// here they start at 0.
type bbr struct {
	env                 *Env
	cpu                 int64
	lastBusy, lastAvail int64
	inflight            int64
	buckets             [bbrBuckets]bbrBucket
	dropSince           int64 // start of the current drop episode, or 0
	passAt, rtAt        int64 // when the cached values were computed, -1: never
	passCache, rtCache  int64
}

const (
	bbrBuckets  = 100
	bbrBucketNs = int64(100 * time.Millisecond)
	bbrCPUEvery = 500 * time.Millisecond
)

type bbrBucket struct {
	index, pass, rtSum, rtCount int64
}

// NewBBR returns aegis's BBR with the simulated CPU.
func NewBBR(env *Env) (Controller, error) {
	return &bbr{env: env, passAt: -1, rtAt: -1}, nil
}

func (b *bbr) Every() time.Duration { return bbrCPUEvery }

func (b *bbr) Tick(int64) {
	busy, avail := b.env.Work()
	usage := int64(0)
	if d := avail - b.lastAvail; d > 0 {
		usage = min(1000, (busy-b.lastBusy)*1000/d)
	}
	b.lastBusy, b.lastAvail = busy, avail
	b.cpu = int64(float64(b.cpu)*0.95 + float64(usage)*0.05)
}

func (b *bbr) bucket(now int64) *bbrBucket {
	i := now / bbrBucketNs
	k := &b.buckets[i%bbrBuckets]
	if k.index != i {
		*k = bbrBucket{index: i}
	}
	return k
}

// window calls f on the buckets of the last 10 s but the current one.
func (b *bbr) window(now int64, f func(*bbrBucket)) {
	cur := now / bbrBucketNs
	for i := cur - bbrBuckets + 1; i < cur; i++ {
		if i < 0 {
			continue
		}
		if k := &b.buckets[i%bbrBuckets]; k.index == i {
			f(k)
		}
	}
}

// maxPass is the most completions in a bucket (at least 1) and minRT the
// least of the buckets' average RT in ms, rounded up (at least 1); aegis
// computes each at most once a bucket's length, and so does shouldDrop.
func (b *bbr) maxPass(now int64) int64 {
	m := int64(1)
	b.window(now, func(k *bbrBucket) { m = max(m, k.pass) })
	return m
}

func (b *bbr) minRT(now int64) int64 {
	m := math.MaxFloat64
	b.window(now, func(k *bbrBucket) {
		if k.rtCount > 0 {
			m = math.Min(m, float64(k.rtSum)/float64(k.rtCount))
		}
	})
	if m == math.MaxFloat64 {
		return 1
	}
	return max(1, int64(math.Ceil(m)))
}

// maxInFlight is Little's law: maxPass per bucket × buckets per second ×
// minRT in seconds, from the cached values.
func (b *bbr) maxInFlight(now int64) int64 {
	if b.passAt < 0 || now-b.passAt >= bbrBucketNs {
		b.passAt, b.passCache = now, b.maxPass(now)
	}
	if b.rtAt < 0 || now-b.rtAt >= bbrBucketNs {
		b.rtAt, b.rtCache = now, b.minRT(now)
	}
	return little(b.passCache, b.rtCache)
}

func little(pass, rt int64) int64 { return pass * rt * (int64(time.Second) / bbrBucketNs) / 1000 }

func (b *bbr) shouldDrop(now int64) bool {
	if b.cpu < 800 {
		if b.dropSince == 0 {
			return false
		}
		if now-b.dropSince <= int64(time.Second) {
			// Cool-off: the CPU swings around the threshold once
			// shedding starts; keep checking for a second.
			return b.inflight > 1 && b.inflight > b.maxInFlight(now)
		}
		b.dropSince = 0
		return false
	}
	drop := b.inflight > 1 && b.inflight > b.maxInFlight(now)
	if drop && b.dropSince == 0 {
		b.dropSince = max(now, 1)
	}
	return drop
}

func (b *bbr) Admit(now int64, _ *Request) bool {
	if b.shouldDrop(now) {
		return false
	}
	b.inflight++
	return true
}

// Done counts a completion whether or not the request met its deadline,
// as aegis does.
func (b *bbr) Done(now int64, _ *Request, latency time.Duration, _ bool) {
	k := b.bucket(now)
	if rt := int64(math.Ceil(float64(latency) / float64(time.Millisecond))); rt > 0 {
		k.rtSum += rt
		k.rtCount++
	}
	b.inflight--
	k.pass++
}

// Limit is the concurrency BBR would enforce now: maxInFlight, which it
// enforces only while the CPU is past its threshold or in the cool-off.
// It reads the window afresh, leaving shouldDrop's caches alone.
func (b *bbr) Limit(now int64) float64 { return float64(little(b.maxPass(now), b.minRT(now))) }
