package redisstore

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// script is a Lua script as the package sends it: FCALL of its function in
// a library (functions.go) to a server that has Functions, EVALSHA with
// its digest to one that has not, and EVAL with its source when a server
// answers NOSCRIPT (it has not seen the script since it started or its
// cache was flushed).
//
// Unlike go-redis's Script, every command it sends is marked never to be
// retried by the client. go-redis retries a command after a read timeout
// or a dropped connection (MaxRetries, and a Cluster client's
// MaxRedirects), and a script that ran but whose reply was lost would then
// run again and charge twice. A lost reply is a store error instead, which
// the caller's failure mode handles, and a key is never charged for a
// request that was not admitted. Redirects (MOVED, ASK) are still
// followed: a script a server redirects has not run. Retries of the
// client's other commands are not changed. A call is sent again only
// after an answer that says it did not run: NOSCRIPT, or that the
// function (or FCALL itself) does not exist.
type script struct {
	src, hash string
	lib       *library // nil: no function
	fn        string   // its function in lib
}

func newScript(src string) *script {
	sum := sha1.Sum([]byte(src))
	return &script{src: src, hash: hex.EncodeToString(sum[:])}
}

// once is a script's command, which the client must not send twice. It
// holds one pointer, so making a redis.Cmder of it allocates nothing.
type once struct{ *redis.IntSliceCmd }

// NoRetry tells go-redis not to send the command again after a failure.
func (once) NoRetry() bool { return true }

// via is how a call is sent.
type via uint8

const (
	viaEvalsha via = iota // then EVAL on NOSCRIPT
	viaEval
	viaFcall  // then, if the function is missing, FUNCTION LOAD and viaReload
	viaReload // FCALL after a load; EVAL if the function is missing still
)

// cmd returns the command that runs s on keys with args, sent via v.
func (s *script) cmd(ctx context.Context, v via, keys []string, args []any) *redis.IntSliceCmd {
	a := make([]any, 3+len(keys), 3+len(keys)+len(args))
	switch v {
	case viaEvalsha:
		a[0], a[1] = "evalsha", s.hash
	case viaEval:
		a[0], a[1] = "eval", s.src
	default:
		a[0], a[1] = "fcall", s.fn
	}
	a[2] = len(keys)
	for i, k := range keys {
		a[3+i] = k
	}
	a = append(a, args...)
	c := redis.NewIntSliceCmd(ctx, a...)
	c.SetFirstKeyPos(3) // for a Cluster client's routing
	return c
}

// via returns how a call to r's server is first sent: FCALL unless the
// server refused Functions, the script has no function, or the client is
// of a kind whose servers this package cannot load a library on.
func (l *Limiter) via(r *route) via {
	if l.script.lib == nil || !l.functions || r.fn.off.Load() {
		return viaEvalsha
	}
	return viaFcall
}

// again returns how to send again a call sent via v to r's server that
// failed with err, and false if it must not be: only an answer that says
// the call did not run is tried again. rkey is the call's key, for a
// Cluster's loads; ld is the round trip's load (see load).
func (l *Limiter) again(ctx context.Context, r *route, v via, err error, rkey string, ld *loaded) (via, bool) {
	switch v {
	case viaEvalsha:
		return viaEval, noScript(err)
	case viaFcall:
		if unknownCommand(err) {
			r.fn.off.Store(true) // before Redis 7
			return viaEvalsha, true
		}
		if fnMissing(err) {
			if l.load(ctx, r, rkey, ld) {
				return viaReload, true
			}
			return viaEvalsha, true
		}
	case viaReload:
		return viaEval, fnMissing(err) || unknownCommand(err)
	}
	return v, false
}

// exec sends l's script for one call to r's server and waits for its
// reply, sending it again (see again) while the server answers that it
// did not run it.
func (l *Limiter) exec(ctx context.Context, r *route, keys []string, args []any) *redis.IntSliceCmd {
	v, ld := l.via(r), notTried
	for {
		cmd := l.script.cmd(ctx, v, keys, args)
		_ = l.client.Process(ctx, once{cmd}) // the command holds its error
		next, ok := l.again(ctx, r, v, cmd.Err(), keys[0], &ld)
		if !ok {
			return cmd
		}
		v = next
	}
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
