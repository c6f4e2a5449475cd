package rls_test

import (
	"fmt"
	"testing"

	"github.com/floodgate/floodgate/internal/rls"
)

// TestLocalQuotaCharges: a charge given to the Multi says whether its rule
// takes local quota: its own LocalQuota, or every rule's under
// Config.LocalQuota. The local cache of refused keys still answers first:
// a key it holds asks the Multi nothing.
func TestLocalQuotaCharges(t *testing.T) {
	a, b := perMinute("a", "a", 1), perMinute("b", "b", 10)
	a.LocalQuota = true
	for _, tc := range []struct {
		global bool
		want   string // the Local of a's charge and b's
	}{
		{false, "[true false]"},
		{true, "[true true]"},
	} {
		t.Run(fmt.Sprint("global ", tc.global), func(t *testing.T) {
			g, m := newMultiRig(t, table{"d|a=1": {a, "ka"}, "d|b=1": {b, "kb"}}, rls.Config{LocalQuota: tc.global, LocalCacheBytes: 1 << 16})
			for i, step := range []struct {
				want  string
				calls int
			}{
				{"OK OK/0 OK/9", 1},
				{"OVER_LIMIT OVER_LIMIT/0 OK/9", 1},
				{"OVER_LIMIT OVER_LIMIT/0 OK/0", 0}, // a is in the local cache: b undecided
			} {
				calls := m.calls
				if _, got := g.ask(0, desc("a=1"), desc("b=1")); got != step.want || m.calls-calls != step.calls {
					t.Fatalf("step %d: %s after %d Multi calls, want %s after %d", i, got, m.calls-calls, step.want, step.calls)
				}
			}
			if got := fmt.Sprint(m.local); got != tc.want {
				t.Errorf("Local of the charges %s, want %s", got, tc.want)
			}
		})
	}
}
