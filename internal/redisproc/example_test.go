package redisproc_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/floodgate/floodgate/internal/redisproc"
)

// A program starts its own throwaway Redis, uses it, and stops it. (Not run
// as a test: it needs redis-server.)
func Example() {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		fmt.Println("no redis-server in PATH")
		return
	}
	dir, err := os.MkdirTemp("", "redis-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	p, err := redisproc.Start(context.Background(), redisproc.Config{
		Bin:   bin,
		Dir:   dir,
		Lines: []string{`save ""`, "appendonly no"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Terminate(syscall.SIGTERM, 5*time.Second)
	fmt.Println(redisproc.Command(p.Addr(), "", "PING"))
}

// Quote keeps a password with spaces, quotes or backslashes one argument of
// redis.conf.
func ExampleQuote() {
	fmt.Println("requirepass " + redisproc.Quote(`s3 "cret\`))
	// Output:
	// requirepass "s3 \"cret\\"
}

// InfoField reads one line of an INFO reply, here the one that tells which
// process answers on a port.
func ExampleInfoField() {
	info := "# Server\r\nredis_version:7.0.15\r\nprocess_id:4242\r\n"
	fmt.Println(redisproc.InfoField(info, "process_id"))
	fmt.Printf("%q\n", redisproc.InfoField(info, "role"))
	// Output:
	// 4242
	// ""
}
