package redisstore_test

import (
	"testing"

	"github.com/floodgate/floodgate/internal/redistest"
)

// TestMain lets 8 parallel tests run at once (one per CPU under -race):
// most of them wait (a Cluster's start, an outage, a fleet run in real
// time) and use little CPU. The tests that count allocations or load every
// CPU do not call t.Parallel, and so run alone; see runAs for the others
// that must not run side by side.
func TestMain(m *testing.M) { redistest.Main(m, 8) }
