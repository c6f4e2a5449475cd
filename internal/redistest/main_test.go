package redistest

import "testing"

// TestMain lets 8 parallel tests run at once (one per CPU under -race):
// a Cluster and a Sentinel group take seconds to start, waiting.
func TestMain(m *testing.M) { Main(m, 8) }
