package redisstore_test

import (
	"sync"
	"testing"
)

// Two kinds of parallel test must not run at once. Real-time tests check
// wall-clock bounds under load: how long a request waits on a dead or hung
// server, how many round trips a 100 ms timeout cuts, a lease kept alive
// by its real timer. Busy tests keep every CPU working for seconds with
// round trips at full speed. Beside a busy test, a real-time test's bounds
// would hold only on an idle machine. Tests of one kind run together, and
// beside the tests of neither kind, which mostly wait.
type kind int

const (
	realTime kind = iota
	busy
)

var kinds struct {
	mu      sync.Mutex
	changed sync.Cond // kinds.running changed; on mu
	running [2]int
}

func init() { kinds.changed.L = &kinds.mu }

// runAs waits until no test of the other kind runs, then counts t as one
// of kind k until t ends. Call it after t.Parallel, in a test without
// subtests of another kind (they would wait for t, and t for them).
func runAs(t *testing.T, k kind) {
	t.Helper()
	kinds.mu.Lock()
	for kinds.running[1-k] > 0 {
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
