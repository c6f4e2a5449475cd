package grpcmw_test

import (
	"sync"
	"testing"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/grpcmw"
)

// TestOptionSharedByNew: one Option value, WithSkip(nil) here, applied by
// several New calls at once must not race (it wrote the function it had
// captured; go test -race found it when parallel tests shared one).
func TestOptionSharedByNew(t *testing.T) {
	lim := core.MustNew(core.PerSecond(1))
	opt := grpcmw.WithSkip(nil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := grpcmw.New(lim, grpcmw.KeyByMethod(), opt); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}
