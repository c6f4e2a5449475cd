package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLiveEdit runs the example on a loopback port with a copy of its
// rules file, exhausts the login limit, raises it in the file, and checks
// that the next login passes without a restart; then breaks the file and
// checks that the raised limit stays, that SIGHUP reloads, and that the
// server says it stopped.
func TestLiveEdit(t *testing.T) {
	src, err := os.ReadFile("rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rules.yaml")
	write := func(data string) {
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write(string(src))

	ctx, stop := context.WithCancel(context.Background())
	addrs := make(chan string, 1)
	reloads := make(chan error, 8)
	done := make(chan error, 1)
	var out bytes.Buffer
	go func() {
		done <- run(ctx, config{
			addr: "127.0.0.1:0", rules: path,
			log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
			out:      &out,
			ready:    func(a string) { addrs <- a },
			reloaded: func(err error) { reloads <- err },
		})
	}()
	stopped := false
	defer func() {
		if !stopped {
			stop()
			<-done
		}
	}()
	var base string
	select {
	case a := <-addrs:
		base = "http://" + a
	case err := <-done:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not start within 10s")
	}
	client := &http.Client{Timeout: 5 * time.Second}
	post := func(path string) int {
		resp, err := client.Post(base+path, "text/plain", strings.NewReader("hi"))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	wait := func() error {
		select {
		case err := <-reloads:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("no reload within 10s")
			return nil
		}
	}

	for i := range 5 {
		if code := post("/login"); code != 200 {
			t.Fatalf("login %d: %d", i+1, code)
		}
	}
	if code := post("/login"); code != 429 {
		t.Fatalf("sixth login: %d, want 429", code)
	}

	write(strings.Replace(string(src), `limit: "5/min"`, `limit: "50/min"`, 1))
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if code := post("/login"); code != 200 {
		t.Errorf("login after raising the limit: %d, want 200", code)
	}

	write(strings.Replace(string(src), `limit: "5/min"`, `limit: "50/min"`+"\n    burst: 3", 1))
	err = wait()
	if err == nil || !strings.Contains(err.Error(), "rules[0].burst: unknown field") {
		t.Fatalf("broken file: %v", err)
	}
	if code := post("/login"); code != 200 {
		t.Errorf("login after a broken edit: %d, want 200 under the raised limit", code)
	}
	// The shadow rule never refuses.
	for range 40 {
		resp, err := client.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET / in shadow mode: %d", resp.StatusCode)
		}
	}

	// SIGHUP reloads the unchanged file at once.
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if err := wait(); err == nil || !strings.Contains(err.Error(), "rules[0].burst: unknown field") {
		t.Fatalf("reload on SIGHUP: %v, want the broken file's error again", err)
	}

	// Stopped, it shuts down and says so.
	stop()
	stopped = true
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if out.String() != "stopped\n" {
		t.Errorf("output %q, want stopped", out.String())
	}
}
