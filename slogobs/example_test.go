package slogobs_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/slogobs"
)

// Three refusals of one client in one second, with a quota of two lines a
// second: the third is dropped and counted in the next line, a second
// later. Keys are shown through a redaction function of the caller's.
func Example() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{} // no time, so that the output is stable
			}
			return a
		},
	}))
	clock := coretest.NewClock(time.Unix(1_700_000_000, 0))
	obs, err := slogobs.New(logger,
		slogobs.WithMaxPerSecond(2),
		slogobs.WithClock(clock),
		slogobs.WithKeyRedaction(func(key string) string { return fmt.Sprintf("client#%d", len(key)) }),
	)
	if err != nil {
		panic(err)
	}
	refusal := core.Event{
		Transport: "http",
		Outcome:   core.OutcomeDenied,
		Key:       "203.0.113.9",
		Cost:      1,
		Decision:  core.Decision{Limit: core.PerMinute(5).WithName("login"), RetryAfter: 12 * time.Second},
	}
	for range 3 {
		obs.Observe(context.Background(), refusal)
	}
	clock.Advance(time.Second)
	obs.Observe(context.Background(), refusal)
	// Output:
	// level=INFO msg="rate limit: refused" outcome=denied transport=http limit=login key=client#11 cost=1 retry_after=12s
	// level=INFO msg="rate limit: refused" outcome=denied transport=http limit=login key=client#11 cost=1 retry_after=12s
	// level=INFO msg="rate limit: refused" outcome=denied transport=http limit=login key=client#11 cost=1 retry_after=12s suppressed=1
}
