package outputtest_test

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/floodgate/floodgate/examples/internal/outputtest"
)

// TestWaitFor: a line written later, by another goroutine, in pieces, is
// found with its group.
func TestWaitFor(t *testing.T) {
	out := outputtest.New()
	go func() {
		fmt.Fprint(out, "starting\nserving at http://127.0.0.1:")
		fmt.Fprint(out, "8080 until Ctrl-C\n")
	}()
	if got := out.WaitFor(t, regexp.MustCompile(`serving at (\S+) until`)); got != "http://127.0.0.1:8080" {
		t.Errorf("WaitFor = %q", got)
	}
}
