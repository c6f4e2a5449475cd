// Command rules serves a few routes behind limits read from a rules file,
// and changes them live when the file changes.
//
//	go run ./examples/rules                      # serves 127.0.0.1:8080 with examples/rules/rules.yaml
//	go run ./examples/rules -addr :9000 -rules /etc/myapp/rules.yaml
//
// Try it:
//
//	for i in 1 2 3 4 5 6; do curl -s -o /dev/null -w '%{http_code}\n' -X POST localhost:8080/login; done
//
// then raise the login limit in rules.yaml, save, and try again: the log
// says "rules: reloaded" and the new limit holds, without a restart. A
// mistake in the file is logged with its line and field, and the limits
// in force stay. kill -HUP reloads too. Ctrl-C or SIGTERM stops the server
// gracefully: requests in flight may finish, for up to five seconds, and
// it says "stopped".
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/floodgate/floodgate/examples/internal/graceful"
	"github.com/floodgate/floodgate/rules"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	file := flag.String("rules", defaultRules(), "the rules file")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, config{addr: *addr, rules: *file, log: log, out: os.Stdout}); err != nil {
		fmt.Fprintln(os.Stderr, "rules:", err)
		os.Exit(1)
	}
}

// defaultRules is the rules.yaml beside this source file when it is there
// (go run from anywhere in the repository), else rules.yaml in the
// working directory.
func defaultRules() string {
	if _, src, _, ok := runtime.Caller(0); ok {
		p := filepath.Join(filepath.Dir(src), "rules.yaml")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "rules.yaml"
}

// config holds what tests replace.
type config struct {
	addr, rules string
	log         *slog.Logger
	out         io.Writer         // where the shutdown is announced
	ready       func(addr string) // called once the server listens
	reloaded    func(err error)   // called after every reload
}

// gracePeriod bounds how long a stopping server waits for requests in
// flight.
const gracePeriod = 5 * time.Second

func run(ctx context.Context, cfg config) error {
	set, err := rules.Watch(cfg.rules, rules.WithOnReload(func(err error) {
		if err != nil {
			cfg.log.Error("rules: reload failed; the rules in force stay", "err", err)
		} else {
			cfg.log.Info("rules: reloaded", "file", cfg.rules)
		}
		if cfg.reloaded != nil {
			cfg.reloaded(err)
		}
	}))
	if err != nil {
		return err
	}
	defer set.Close()
	// kill -HUP reloads the file at once, as many daemons do.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-hup:
				set.Reload()
			case <-ctx.Done():
				return
			}
		}
	}()
	for _, c := range set.Table().Rules() {
		cfg.log.Info("rule", "name", c.Rule.Name, "paths", c.Rule.Paths, "limits", c.Rule.Limits, "shadow", c.Rule.Shadow)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "welcome")
	})
	mux.HandleFunc("POST /upload", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "stored", r.ContentLength, "bytes")
	})
	mux.HandleFunc("GET /api/items", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, `["apple","pear"]`)
	})
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello from behind floodgate's rules")
	})

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	cfg.log.Info("serving", "addr", ln.Addr().String(), "rules", cfg.rules)
	if cfg.ready != nil {
		cfg.ready(ln.Addr().String())
	}
	srv := &http.Server{Handler: set.Middleware(mux), ReadHeaderTimeout: 5 * time.Second}
	if err := graceful.Serve(ctx, srv, ln, gracePeriod); err != nil {
		return err
	}
	fmt.Fprintln(cfg.out, "stopped")
	return nil
}
