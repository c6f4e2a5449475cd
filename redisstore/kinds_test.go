package redisstore_test

import (
	"sync"
	"testing"

	"github.com/floodgate/floodgate/internal/coretest"
)

// Two kinds of parallel test must not run beside each other. Real-time
// tests check wall-clock bounds under load: how long a request waits on a
// dead or hung server, how many round trips a 100 ms timeout cuts, a lease
// kept alive by its real timer. Busy tests keep every CPU working for
// seconds with round trips at full speed. Beside a busy test, or beside
// other real-time tests' load under -race, a real-time test's bounds
// would hold only on an idle machine. So real-time tests run two at a
// time (one under -race) and with no busy test, busy tests together; both
// beside the tests of neither kind, which mostly wait.
type kind int

const (
	realTime kind = iota
	busy
)

// realTimeAtOnce is how many real-time tests may run at once.
var realTimeAtOnce = map[bool]int{false: 2, true: 1}[coretest.Race]

var kinds struct {
	mu      sync.Mutex
	changed sync.Cond // kinds.running changed; on mu
	running [2]int
}

func init() { kinds.changed.L = &kinds.mu }

// runAs waits until t may run as a test of kind k, then counts it as one
// until it ends. Call it after t.Parallel, in a test with no parallel
// subtests: waiting for those, t would give up its place among the
// running tests while it holds its kind, and tests waiting for the other
// kind could take every place, so that the subtests never ran.
func runAs(t *testing.T, k kind) {
	t.Helper()
	kinds.mu.Lock()
	for kinds.running[1-k] > 0 || k == realTime && kinds.running[realTime] >= realTimeAtOnce {
		kinds.changed.Wait()
	}
	kinds.running[k]++
	kinds.mu.Unlock()
	t.Cleanup(func() {
		kinds.mu.Lock()
		kinds.running[k]--
		kinds.changed.Broadcast()
		kinds.mu.Unlock()
	})
}
