package rules

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// writeFile replaces path the way editors do: write a temporary file
// beside it, then rename it over the old one.
func writeFile(t *testing.T, path, data string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// waitReload waits, bounded, for the next reload the watch reports.
func waitReload(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("no reload within 10s")
		return nil
	}
}

const tight = `rules:
  - name: a
    match: {paths: ["/a"]}
    limit: 1/h
    key: global
`

// TestWatchWhileTrafficRuns edits the file while goroutines send requests
// through the middleware: a valid edit takes effect without a restart, an
// invalid one keeps the rules in force and is reported.
func TestWatchWhileTrafficRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.yaml")
	writeFile(t, path, tight)
	reloads := make(chan error, 16)
	s, err := Watch(path,
		withDebounce(20*time.Millisecond),
		WithOnReload(func(err error) { reloads <- err }))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Middleware(ok)

	// Traffic: four senders, each stopping by itself after a bounded time
	// or when told. phase counts answers per phase of the test.
	var phase atomic.Int32
	var counts [3][2]atomic.Int64 // [phase][0: 200, 1: 429]
	stop := make(chan struct{})
	var wg sync.WaitGroup
	deadline := time.Now().Add(20 * time.Second)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				select {
				case <-stop:
					return
				default:
				}
				p := phase.Load()
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest("GET", "/a", nil))
				switch w.Code {
				case http.StatusOK:
					counts[p][0].Add(1)
				case http.StatusTooManyRequests:
					counts[p][1].Add(1)
				default:
					t.Errorf("status %d", w.Code)
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()

	// Phase 0: 1/h, one key for all: every request after the first is
	// refused.
	waitFor(t, func() bool { return counts[0][1].Load() >= 50 })

	// A valid edit: a limit no traffic reaches.
	writeFile(t, path, strings.Replace(tight, "1/h", "1000000/h", 1))
	if err := waitReload(t, reloads); err != nil {
		t.Fatalf("reload: %v", err)
	}
	phase.Store(1)
	if got := codes(h, "GET", "/a", 1); got != OK {
		t.Errorf("after the edit: %s, want OK", got)
	}
	waitFor(t, func() bool { return counts[1][0].Load() >= 50 })
	if n := counts[1][1].Load(); n != 0 {
		t.Errorf("%d refusals after the limit was raised", n)
	}

	// An invalid edit: reported, and the raised limit stays in force.
	writeFile(t, path, strings.Replace(tight, "1/h", "lots", 1))
	err = waitReload(t, reloads)
	if err == nil || !strings.HasPrefix(err.Error(), path+":4: rules[0].limit: core: limit \"lots\": no '/'") {
		t.Fatalf("invalid edit: %v", err)
	}
	phase.Store(2)
	waitFor(t, func() bool { return counts[2][0].Load() >= 50 })
	if n := counts[2][1].Load(); n != 0 {
		t.Errorf("%d refusals after an invalid edit; want the raised limit kept", n)
	}

	// Back to 1/h: a new policy again, so a fresh limiter whose one
	// token the senders or this request take.
	writeFile(t, path, tight)
	if err := waitReload(t, reloads); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if got := codes(h, "GET", "/a", 2); got != TM+" "+TM && got != OK+" "+TM {
		t.Errorf("after restoring 1/h: %s", got)
	}
}

// waitFor polls cond, bounded, while the traffic goroutines run.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(end) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// withDebounce sets how long Watch waits for the file to settle, so that
// tests need not wait the default 100 ms, or can hold a reload back.
func withDebounce(d time.Duration) Option {
	return func(o *options) { o.debounce = d }
}

// TestReloadWhileWatching: Reload puts the file in force at once, whatever
// the watch's debounce (slowed down to 10 s here, so that only the call
// can explain the reload), and Close may be called twice.
func TestReloadWhileWatching(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.yaml")
	writeFile(t, path, tight)
	reloads := make(chan error, 4)
	s, err := Watch(path, withDebounce(10*time.Second), WithOnReload(func(err error) { reloads <- err }))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	writeFile(t, path, strings.Replace(tight, "name: a", "name: b", 1))
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := waitReload(t, reloads); err != nil {
		t.Fatal(err)
	}
	if name := s.Table().Rules()[0].Rule.Name; name != "b" {
		t.Errorf("after Reload the rule is %q, want b", name)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestWatchErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Watch(filepath.Join(dir, "missing.yaml"), quietly); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("Watch(missing) = %v", err)
	}
	path := filepath.Join(dir, "bad.yaml")
	writeFile(t, path, "rules: 3\n")
	if _, err := Watch(path, quietly); err == nil || !strings.HasPrefix(err.Error(), path+":1: rules: ") {
		t.Errorf("Watch(bad) = %v", err)
	}
}
