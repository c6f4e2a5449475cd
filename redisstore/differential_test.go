package redisstore_test

import (
	"context"
	"testing"

	"github.com/floodgate/floodgate/core"
)

// The differential tests play the same traffic on a limiter in memory and
// on its Redis counterpart, and want the same decisions from both.

// allowBoth asks memory (want) and then Redis (got) to allow cost under
// key.
func allowBoth(t *testing.T, mem, red core.Limiter, key string, cost int) (got, want core.Decision) {
	t.Helper()
	want, err := mem.Allow(context.Background(), key, cost)
	if err != nil {
		t.Fatalf("in memory: %v", err)
	}
	got, err = red.Allow(context.Background(), key, cost)
	if err != nil {
		t.Fatalf("on Redis: %v", err)
	}
	return got, want
}

// refundBoth gives cost back under key in memory and then on Redis.
func refundBoth(t *testing.T, mem, red core.Limiter, key string, cost int) {
	t.Helper()
	if err := mem.Refund(context.Background(), key, cost); err != nil {
		t.Fatalf("in memory: %v", err)
	}
	if err := red.Refund(context.Background(), key, cost); err != nil {
		t.Fatalf("on Redis: %v", err)
	}
}
