package rlsconfig

import (
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type reload struct {
	c    *Config
	errs []error
}

// next waits, bounded, for the watch's next reload.
func next(t *testing.T, ch <-chan reload) reload {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no reload within 10s")
		return reload{}
	}
}

func limitFile(n int) string {
	return "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: " + itoa(uint32(n)) + "}\n"
}

// TestWatch: edits take effect while Match runs on other goroutines; a
// file that turns bad keeps its last good version, a bad new file stays
// out, the others take effect, and every error reaches the callback.
func TestWatch(t *testing.T) {
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml"), filepath.Join(dir, "c.yaml")
	writeFile(t, a, limitFile(1))
	writeFile(t, b, "domain: other\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 7}\n")
	reloads := make(chan reload, 16)
	w, err := Watch(dir, func(c *Config, errs []error) { reloads <- reload{c, errs} }, withDebounce(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if r := next(t, reloads); r.errs != nil || r.c != w.Config() {
		t.Fatalf("first load: %v", r.errs)
	}

	// Readers: Match under the configuration in force, all along.
	var stop atomic.Bool
	var wg sync.WaitGroup
	var seen [3]atomic.Int64 // by requests_per_unit: 1, 2, other
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for deadline := time.Now().Add(20 * time.Second); !stop.Load() && time.Now().Before(deadline); {
				r := w.Config().Match("d", e("k=x"))
				switch {
				case r == nil:
					t.Error("no rule")
					return
				case r.RequestsPerUnit == 1:
					seen[0].Add(1)
				case r.RequestsPerUnit == 2:
					seen[1].Add(1)
				default:
					seen[2].Add(1)
				}
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()

	writeFile(t, a, limitFile(2))
	if r := next(t, reloads); r.errs != nil || r.c.Match("d", e("k=x")).RequestsPerUnit != 2 {
		t.Fatalf("after the edit: %v", r.errs)
	}

	// a.yaml turns bad and c.yaml comes bad: a's last good version stays,
	// c stays out, b's edit takes effect.
	writeFile(t, a, "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight}\n")
	writeFile(t, c, "domain: third\ndescriptors: 3\n")
	writeFile(t, b, "domain: other\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 8}\n")
	var r reload
	for r = next(t, reloads); len(r.errs) < 2 || r.c.Match("other", e("k=x")).RequestsPerUnit != 8; r = next(t, reloads) {
		// Events may come apart; wait for the load that saw all three.
	}
	if len(r.errs) != 2 {
		t.Fatalf("errors %v", r.errs)
	}
	if got := r.errs[0].Error(); !strings.HasPrefix(got, a+":4: descriptors[0].rate_limit.unit: invalid rate limit unit \"fortnight\"") || !strings.HasSuffix(got, "(the file's last good version stays in force)") {
		t.Errorf("a.yaml: %s", got)
	}
	if got := r.errs[1].Error(); !strings.HasPrefix(got, c+":2: descriptors: want a list of descriptors") {
		t.Errorf("c.yaml: %s", got)
	}
	if got := w.Config().Match("d", e("k=x")).RequestsPerUnit; got != 2 {
		t.Errorf("a.yaml's rule: %d per second, want its last good 2", got)
	}
	if w.Config().Domain("third") != nil {
		t.Error("c.yaml is in force")
	}
	stop.Store(true)
	wg.Wait()
	if seen[0].Load() == 0 && seen[1].Load() == 0 || seen[2].Load() != 0 {
		t.Errorf("readers saw %d, %d, %d", seen[0].Load(), seen[1].Load(), seen[2].Load())
	}

	// Reload by call; Close twice.
	writeFile(t, a, limitFile(5))
	if errs := w.Reload(); len(errs) != 1 || w.Config().Match("d", e("k=x")).RequestsPerUnit != 5 {
		t.Errorf("Reload: %v", errs)
	}
	if err := w.Close(); err != nil {
		t.Error(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestWatchMissingDirectory(t *testing.T) {
	var got []error
	_, err := Watch(filepath.Join(t.TempDir(), "missing"), func(_ *Config, errs []error) { got = errs })
	if err == nil || len(got) != 1 {
		t.Errorf("Watch(missing) = %v, reported %v", err, got)
	}
}
