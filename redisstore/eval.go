package redisstore

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// script is a Lua script as the package sends it: EVALSHA with its
// digest, and EVAL with its source when a server answers NOSCRIPT (it has
// not seen the script since it started or its cache was flushed).
//
// Unlike go-redis's Script, every command it sends is marked never to be
// retried by the client. go-redis retries a command after a read timeout
// or a dropped connection (MaxRetries, and a Cluster client's
// MaxRedirects), and a script that ran but whose reply was lost would then
// run again and charge twice. A lost reply is a store error instead, which
// the caller's failure mode handles, and a key is never charged for a
// request that was not admitted. Redirects (MOVED, ASK) are still
// followed: a script a server redirects has not run. Retries of the
// client's other commands are not changed.
type script struct {
	src, hash string
}

func newScript(src string) *script {
	sum := sha1.Sum([]byte(src))
	return &script{src: src, hash: hex.EncodeToString(sum[:])}
}

// once is a script's command, which the client must not send twice. It
// holds one pointer, so making a redis.Cmder of it allocates nothing.
type once struct{ *redis.Cmd }

// NoRetry tells go-redis not to send the command again after a failure.
func (once) NoRetry() bool { return true }

// cmd returns the command that runs s on keys with args: EVALSHA if sha,
// else EVAL.
func (s *script) cmd(ctx context.Context, sha bool, keys []string, args []any) *redis.Cmd {
	a := make([]any, 3+len(keys), 3+len(keys)+len(args))
	a[0], a[1] = "evalsha", s.hash
	if !sha {
		a[0], a[1] = "eval", s.src
	}
	a[2] = len(keys)
	for i, k := range keys {
		a[3+i] = k
	}
	a = append(a, args...)
	c := redis.NewCmd(ctx, a...)
	c.SetFirstKeyPos(3) // for a Cluster client's routing
	return c
}

// run sends s to c and waits for its reply: once with EVALSHA and, if the
// server does not know the script, once more with EVAL.
func (s *script) run(ctx context.Context, c redis.UniversalClient, keys []string, args []any) *redis.Cmd {
	cmd := s.cmd(ctx, true, keys, args)
	_ = c.Process(ctx, once{cmd}) // the command holds its error
	if noScript(cmd.Err()) {
		cmd = s.cmd(ctx, false, keys, args)
		_ = c.Process(ctx, once{cmd})
	}
	return cmd
}

// queue adds s, as EVALSHA if sha, else EVAL, to the pipeline p and
// returns its command, answered when p is executed.
func (s *script) queue(ctx context.Context, p redis.Pipeliner, sha bool, keys []string, args []any) *redis.Cmd {
	cmd := s.cmd(ctx, sha, keys, args)
	_ = p.Process(ctx, once{cmd})
	return cmd
}

// noScript reports whether err is a server's NOSCRIPT answer: the script
// did not run.
func noScript(err error) bool {
	return err != nil && (err == redis.ErrNoScript || redis.HasErrorPrefix(err, "NOSCRIPT"))
}

// checkClient refuses a client that would hold a call past timeout. A
// go-redis client ignores a context's deadline unless its options set
// ContextTimeoutEnabled, and then waits up to its ReadTimeout (5 s by
// default, each way) on a hung server: a paused or overloaded Redis would
// hold every request that long, WithFallback too, whatever this
// package's timeout says. A client of another type is taken as it is.
func checkClient(c redis.UniversalClient, timeout time.Duration) error {
	if timeout <= 0 {
		return nil
	}
	var honours bool
	var read, write time.Duration
	kind := "redis.Options"
	switch c := c.(type) {
	case *redis.Client:
		o := c.Options()
		honours, read, write = o.ContextTimeoutEnabled, o.ReadTimeout, o.WriteTimeout
	case *redis.ClusterClient:
		o := c.Options()
		honours, read, write = o.ContextTimeoutEnabled, o.ReadTimeout, o.WriteTimeout
		kind = "redis.ClusterOptions"
	case *redis.Ring:
		o := c.Options()
		honours, read, write = o.ContextTimeoutEnabled, o.ReadTimeout, o.WriteTimeout
		kind = "redis.RingOptions"
	default:
		return nil
	}
	if !honours {
		return fmt.Errorf("redisstore: the client ignores context deadlines (ContextTimeoutEnabled is false, go-redis's default), so a hung Redis would hold each request for the client's ReadTimeout, not this limiter's %v timeout: set ContextTimeoutEnabled: true in %s (or redis.FailoverOptions, redis.UniversalOptions)", timeout, kind)
	}
	if read < 0 || write < 0 {
		// -2 in the options: go-redis then sets no socket deadline at all,
		// not even a context's.
		return fmt.Errorf("redisstore: the client sets no socket deadlines (ReadTimeout or WriteTimeout is -2), so a hung Redis would hold each request past this limiter's %v timeout: leave them at their defaults in %s, or use -1 (no timeout of the client's own)", timeout, kind)
	}
	return nil
}
