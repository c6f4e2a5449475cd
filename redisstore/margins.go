package redisstore

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"time"
)

// maxTTLJitter bounds WithTTLJitter. Spreading expiries over more than a
// day spreads nothing that matters more, while every key is kept half the
// jitter longer on average: a longer jitter is more likely a mistake of
// unit than a wish.
const maxTTLJitter = 24 * time.Hour

// jitterSteps is how many evenly spaced margins WithTTLJitter draws from.
// A call draws one, each as likely, which is a uniform draw over the
// jitter in steps of max/63, as upstream rate limiters draw whole seconds
// uniformly: keys written at one instant expire in 64 groups of about a
// 64th each, spread evenly over the jitter. More steps would cut the
// largest group little further, and each distinct margin costs an entry
// in the scripts' cache of parsed numbers (lua/common.lua), which holds
// 4,096 shared with every limit's parameters.
const jitterSteps = 64

// margins are the TTL margins a limiter's calls send, in ms, each boxed
// once as a script argument (boxing a string allocates): the margin alone,
// or, with WithTTLJitter, min(64, max in ms + 1) margins evenly spaced
// from the margin to the margin plus the jitter, both included.
type margins []any

// pick returns one call's margin: drawn at random from m, by the
// runtime's per-thread generator, which takes no lock and allocates
// nothing.
func (m margins) pick() any {
	if len(m) == 1 {
		return m[0]
	}
	return m[rand.IntN(len(m))]
}

// marginTables shares margins among the limiters of one margin and jitter
// (a service makes a Limiter per rule), up to maxMarginTables of them;
// beyond, each limiter makes its own.
var marginTables struct {
	sync.Mutex
	m map[[2]int64]margins // margin and jitter, in ms
}

const maxMarginTables = 16

// marginsOf returns the margins of a limiter whose keys live margin past
// whole plus up to jitter.
func marginsOf(margin, jitter time.Duration) margins {
	key := [2]int64{margin.Milliseconds(), jitter.Milliseconds()}
	marginTables.Lock()
	defer marginTables.Unlock()
	if m, ok := marginTables.m[key]; ok {
		return m
	}
	ms, j := key[0], key[1]
	n := min(jitterSteps, j+1)
	m := make(margins, n)
	for i := range m {
		d := int64(0)
		if n > 1 {
			d = int64(i) * j / (n - 1)
		}
		m[i] = strconv.FormatInt(ms+d, 10)
	}
	if marginTables.m == nil {
		marginTables.m = map[[2]int64]margins{}
	}
	if len(marginTables.m) < maxMarginTables {
		marginTables.m[key] = m
	}
	return m
}
