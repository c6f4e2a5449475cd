// Package redisproc runs throwaway redis-server processes on 127.0.0.1 and
// speaks just enough RESP to check on them. It is the part that the test
// harness internal/redistest and the program examples/redis share; it takes
// no testing.TB, so a program can use it too.
//
// [Start] writes redis.conf into a directory (port, bind 127.0.0.1, dir,
// logfile, then the caller's lines), starts redis-server on a free port,
// trying another port when one is taken before the server binds it, and
// waits until the server answers PING as itself: INFO server must report
// the pid of the process started, not of one that took the port meanwhile.
// Every wait is bounded, and a failure quotes the end of the server's log.
//
//	p, err := redisproc.Start(ctx, redisproc.Config{
//		Bin:   bin, // from exec.LookPath("redis-server")
//		Dir:   dir,
//		Lines: []string{`save ""`, "appendonly no"},
//	})
//	if err != nil {
//		return err
//	}
//	defer p.Terminate(syscall.SIGTERM, 5*time.Second)
//	client := redis.NewClient(&redis.Options{Addr: p.Addr()})
//
// On Linux the kernel kills the server with SIGKILL when the program that
// started it dies without stopping it (a crash, go test -timeout), so no
// server outlives its program. Elsewhere the caller's own stop is all.
package redisproc
