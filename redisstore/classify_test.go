package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
)

// replyErr is an error reply from a server, as go-redis gives it.
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

// TestClassify: which outcomes of a round trip count against the server,
// which show it up, and which say nothing about it.
func TestClassify(t *testing.T) {
	t.Parallel()
	live := context.Background()
	canceled, cancel := context.WithCancel(live)
	cancel()
	expired, cancel2 := context.WithTimeout(live, -1)
	defer cancel2()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	ioTimeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, tt := range []struct {
		name         string
		caller, wire context.Context
		err          error
		want         verdict
	}{
		{"success", live, live, nil, answered},
		{"success, the caller gone since", canceled, canceled, nil, answered},

		// The server answered with an error the request caused: it is up.
		{"CROSSSLOT", live, live, redis.ErrCrossSlot, answered},
		{"WRONGTYPE", live, live, replyErr("WRONGTYPE Operation against a key holding the wrong kind of value"), answered},
		{"the script's own error", live, live, replyErr("floodgate: malformed state at floodgate:{k}:tb:1/1:1: x"), answered},
		{"the script's own error, Redis 6", live, live, replyErr("ERR Error running script (call to f_0): @user_script:14: floodgate: malformed state"), answered},
		{"another ERR", live, live, replyErr("ERR wrong number of arguments for 'evalsha' command"), answered},
		{"NOSCRIPT, after EVAL", live, live, redis.ErrNoScript, answered},
		{"NOAUTH", live, live, replyErr("NOAUTH Authentication required."), answered},
		{"BUSYKEY is not BUSY", live, live, replyErr("BUSYKEY Target key name already exists."), answered},
		{"an error reply, the deadline passed since", live, expired, replyErr("WRONGTYPE Operation against a key"), answered},

		// The server answered that it cannot serve.
		{"LOADING", live, live, replyErr("LOADING Redis is loading the dataset in memory"), failed},
		{"BUSY", live, live, replyErr("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."), failed},
		{"MASTERDOWN", live, live, replyErr("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."), failed},
		{"CLUSTERDOWN", live, live, replyErr("CLUSTERDOWN The cluster is down"), failed},
		{"TRYAGAIN", live, live, replyErr("TRYAGAIN Multiple keys request during rehashing of slot"), failed},
		{"READONLY", live, live, replyErr("READONLY You can't write against a read only replica."), failed},
		{"OOM", live, live, replyErr("OOM command not allowed when used memory > 'maxmemory'."), failed},
		{"NOREPLICAS", live, live, replyErr("NOREPLICAS Not enough good replicas to write."), failed},
		{"MISCONF", live, live, replyErr("MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk."), failed},
		{"max clients", live, live, replyErr("ERR max number of clients reached"), failed},
		{"ERR LOADING (a server that adds ERR)", live, live, replyErr("ERR LOADING Redis is loading the dataset in memory"), failed},
		{"unwell, wrapped", live, live, fmt.Errorf("pipeline: %w", replyErr("LOADING Redis is loading")), failed},

		// The network.
		{"refused", live, live, refused, failed},
		{"reset", live, live, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, failed},
		{"closed by the server", live, live, io.EOF, failed},
		{"cut mid-reply", live, live, io.ErrUnexpectedEOF, failed},
		{"the client's own read timeout", live, live, ioTimeout, failed},
		{"something else", live, live, errors.New("redis: can't parse reply"), failed},

		// The timeout, on the wire or the caller's.
		{"the round trip outlived the timeout", live, expired, ioTimeout, failed},
		{"the round trip outlived the timeout, as the context says", live, expired, context.DeadlineExceeded, failed},
		{"the caller gave up", canceled, canceled, context.Canceled, noEvidence},
		{"the caller's deadline, shorter than the timeout", expired, expired, ioTimeout, noEvidence},
		{"the caller gave up, whatever the error", canceled, canceled, refused, noEvidence},

		// The client's own doing.
		{"no connection free in the pool", live, live, redis.ErrPoolTimeout, noEvidence},
		{"the pool exhausted", live, live, redis.ErrPoolExhausted, noEvidence},
		{"the client closed", live, live, redis.ErrClosed, noEvidence},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := classify(tt.caller, tt.wire, tt.err); got != tt.want {
				t.Errorf("classify(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func (v verdict) String() string {
	switch v {
	case noEvidence:
		return "noEvidence"
	case answered:
		return "answered"
	case failed:
		return "failed"
	}
	return fmt.Sprintf("verdict(%d)", int(v))
}
