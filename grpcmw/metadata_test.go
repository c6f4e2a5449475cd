package grpcmw_test

import (
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/grpcmw"
	"github.com/floodgate/floodgate/internal/coretest"
)

// TestDefaultMetadataNearLimit checks the default: no rate-limit metadata
// on an admission that leaves more than a tenth of the burst, both styles'
// fields on the others and on a refusal (with retry-after); and that
// WithHeaders(HeadersBoth) sends them on every call.
func TestDefaultMetadataNearLimit(t *testing.T) {
	t.Parallel()
	const policy = `"api";q=20;w=60`
	limit := core.PerMinute(20).WithName("api")
	clock := coretest.NewClock(t0)
	e := serveLimiter(t, grpcmw.MustNew(gcra(t, limit, clock), grpcmw.Constant("k"), grpcmw.WithSkip(nil)))
	ctx := callCtx(t)
	for i := range 20 {
		h, _, err := e.Check(ctx)
		if err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		remaining := 19 - i
		if remaining > 2 { // more than a tenth of 20 left
			wantMD(t, "call far from the limit", h, metadata.MD{})
			continue
		}
		rem := string(rune('0' + remaining))
		reset := []string{"60", "57", "54"}[remaining] // ceil(ResetAfter): 3 s a call
		wantMD(t, "call near the limit", h, allowedMD(policy, "20", rem, reset, `"api";r=`+rem+`;t=`+reset))
	}
	h, _, err := e.Check(ctx)
	if d := parseDenial(t, err); d.retry <= 0 {
		t.Fatalf("refusal without RetryInfo: %+v", d)
	}
	denied := allowedMD(policy, "20", "0", "60", `"api";r=0;t=3`)
	denied["retry-after"] = []string{"3"}
	wantMD(t, "refused call", h, denied)

	// The full metadata on every call, as before this default.
	e = serveLimiter(t, grpcmw.MustNew(gcra(t, limit, coretest.NewClock(t0)), grpcmw.Constant("k"),
		grpcmw.WithSkip(nil), grpcmw.WithHeaders(core.HeadersBoth)))
	h, _, err = e.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantMD(t, "WithHeaders(HeadersBoth), first call", h, allowedMD(policy, "20", "19", "3", `"api";r=19;t=3`))
}
