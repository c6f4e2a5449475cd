package slogobs_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/slogobs"
)

// A refusal, and a store failure under fail-open, each logged once with
// its attributes. Keys are shown through a redaction function of the
// caller's; lines beyond 2 a second of each kind would be dropped and
// counted.
func Example() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{} // no time, so that the output is stable
			}
			return a
		},
	}))
	obs, err := slogobs.New(logger,
		slogobs.WithMaxPerSecond(2),
		slogobs.WithKeyRedaction(func(key string) string { return fmt.Sprintf("client#%d", len(key)) }),
	)
	if err != nil {
		panic(err)
	}
	login := core.PerMinute(5).WithName("login")
	obs.Observe(context.Background(), core.Event{
		Transport: "http",
		Outcome:   core.OutcomeDenied,
		Key:       "203.0.113.9",
		Cost:      1,
		Decision:  core.Decision{Limit: login, RetryAfter: 12 * time.Second},
	})
	obs.Observe(context.Background(), core.Event{
		Transport: "http",
		Outcome:   core.OutcomeStoreError,
		Failure:   core.FailOpen,
		Admitted:  true,
		Key:       "203.0.113.9",
		Cost:      1,
		Err:       errors.New("redis: i/o timeout"),
	})
	// Output:
	// level=INFO msg="rate limit: refused" outcome=denied transport=http limit=login key=client#11 cost=1 retry_after=12s
	// level=WARN msg="rate limit: store failed" outcome=store_error transport=http key=client#11 cost=1 failure=fail-open admitted=true error="redis: i/o timeout"
}
