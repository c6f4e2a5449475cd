package echomw_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/echomw"
	"github.com/floodgate/floodgate/httpmw"
)

// TestOptionSharedByNew: one Option value, WithSkip(nil) here, applied by
// several New calls at once must not race (it wrote the skipper it had
// captured, as grpcmw's did).
func TestOptionSharedByNew(t *testing.T) {
	l := httpmw.MustNew(core.MustNew(core.PerSecond(1)), func(r *http.Request) (string, error) { return r.RemoteAddr, nil })
	opt := echomw.WithSkip(nil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { _ = echomw.New(l, opt) })
	}
	wg.Wait()
}
