package grpcmw_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/grpcmw"
)

// fixed is a custom core.Limiter that answers every call with d.
type fixed struct{ d core.Decision }

func (f fixed) Allow(context.Context, string, int) (core.Decision, error) { return f.d, nil }
func (f fixed) Refund(context.Context, string, int) error                 { return nil }

// TestHostilePolicyNames refuses calls for custom limiters whose policy
// names core.Limit.Validate would never accept: long ones (issue 18's
// defect 5 dropped the numbers) and ones that are not UTF-8 (a proto string
// must be, and building the details panicked). Every refusal carries its
// details, Retry-After >= 1 and all the numbers, and names the policy in
// its details as the fields do.
func TestHostilePolicyNames(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, sent string }{
		{"a\xffb", "a_b"},
		{"\xc3", "_"},
		{strings.Repeat("n", 140), strings.Repeat("n", 72)},
		{strings.Repeat("é\"z\r\n\xff", 50), ""}, // cut, checked against RateLimit
	}
	for _, tc := range tests {
		t.Run(strconv.Quote(tc.name[:min(len(tc.name), 12)]), func(t *testing.T) {
			t.Parallel()
			d := core.Decision{
				Limit:      core.Limit{Events: 5, Period: time.Minute, Name: tc.name},
				ResetAfter: time.Minute, RetryAfter: 11500 * time.Millisecond,
			}
			e := serveLimiter(t, grpcmw.MustNew(fixed{d}, grpcmw.Constant("k"), limitAll))
			h, _, err := e.Check(callCtx(t))
			den := parseDenial(t, err)
			if den.code != codes.ResourceExhausted || den.retry != d.RetryAfter || den.details != 3 {
				t.Fatalf("refusal %+v", den)
			}
			md := rlFields(h)
			rl := md.Get("ratelimit")
			if len(rl) != 1 || md.Get("retry-after")[0] != "12" || md.Get("x-ratelimit-remaining")[0] != "0" ||
				md.Get("x-ratelimit-reset")[0] != "60" || !strings.HasSuffix(rl[0], `";r=0;t=12`) {
				t.Fatalf("metadata %v", md)
			}
			sent := strings.TrimSuffix(strings.TrimPrefix(rl[0], `"`), `";r=0;t=12`)
			sent = strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(sent)
			if tc.sent != "" && sent != tc.sent {
				t.Errorf("RateLimit names %q, want %q", sent, tc.sent)
			}
			if den.subject != sent || den.meta["policy"] != sent {
				t.Errorf("details name %q and %q, RateLimit %q", den.subject, den.meta["policy"], sent)
			}
		})
	}
}
