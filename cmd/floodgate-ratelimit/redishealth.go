package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
)

// pingEvery is how often REDIS_HEALTH_CHECK_ACTIVE_CONNECTION checks that
// Redis answers.
const pingEvery = time.Second

// watchRedis tells health whether b answers: unhealthy until a PING does,
// tried again as s.startup says; an error on fatal when it has not
// answered within s.startup.maxElapsed. With s.redisHealthActive, it goes
// on pinging every pingEvery, and health follows.
func watchRedis(ctx context.Context, s *settings, b *redisBackend, component string, h *healthState, log *slog.Logger, fatal chan<- error) {
	ping := func() error {
		timeout := 5 * time.Second
		if b.t.timeout.set && b.t.timeout.v > 0 {
			timeout = b.t.timeout.v
		}
		pctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		cmd := redis.NewStatusCmd(pctx, "ping")
		_ = b.c.Process(pctx, pingOnce{cmd})
		return cmd.Err()
	}
	begin, wait := time.Now(), s.startup.initial
	for {
		err := ping()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		elapsed := time.Since(begin)
		if s.startup.maxElapsed > 0 && elapsed >= s.startup.maxElapsed {
			fatal <- fmt.Errorf("%s did not answer within REDIS_STARTUP_MAX_ELAPSED_TIME (%v): %w", b.t, s.startup.maxElapsed, err)
			return
		}
		log.Warn("Redis does not answer; trying again", "redis", b.t.String(), "in", wait, "error", err)
		if !sleep(ctx, wait) {
			return
		}
		wait = min(2*wait, s.startup.max)
	}
	log.Info("Redis answers", "redis", b.t.String())
	h.set(component, true)
	if !s.redisHealthActive {
		return
	}
	up := true
	for sleep(ctx, pingEvery) {
		err := ping()
		if ctx.Err() != nil {
			return
		}
		if now := err == nil; now != up {
			up = now
			h.set(component, up)
			if up {
				log.Info("Redis answers again", "redis", b.t.String())
			} else {
				log.Error("Redis does not answer: unhealthy", "redis", b.t.String(), "error", err)
			}
		}
	}
}

// pingOnce is a PING go-redis sends once: a health check reports what
// one try finds, and the client's retries would only delay it.
type pingOnce struct{ *redis.StatusCmd }

// NoRetry tells go-redis not to send the command again after a failure.
func (pingOnce) NoRetry() bool { return true }

// sleep waits d or until ctx ends, and reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
