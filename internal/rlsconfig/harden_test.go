package rlsconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEveryError: a file's every error is reported, in the order of the
// file, each with its line, and none is the echo of another.
func TestEveryError(t *testing.T) {
	const y = `domain: d
descriptors:
  - key: a
    rate_limit: {unit: fortnight, requests_per_unit: 1}
  - key: b
    shadow_mode: maybe
    rate_limit:
      unit: second
      requests_per_unit: 1
      algorithm: leaky-bucket
  - value: nokey
    rate_limit: {unit: second, requests_per_unit: -1}
  - key: c
    ratelimit: {}
    descriptors:
      - key: d
        rate_limit:
          unit: second
          requests_per_unit: 2
          algorithm: nope
          burst: 3
          limits:
            - unit: hour
              requests_per_unit: 5
              burst: 7
  - key: a
  - key: e
    rate_limit:
      unit: second
      requests_per_unit: 1
      limits: [{unit: second, requests_per_unit: 1}]
---
domain: again
`
	_, err := Parse("x.yaml", []byte(y))
	want := []string{
		`x.yaml:4: descriptors[0].rate_limit.unit: invalid rate limit unit "fortnight"`,
		`x.yaml:6: descriptors[1].shadow_mode: want true or false, got "maybe"`,
		`x.yaml:10: descriptors[1].rate_limit.algorithm: leaky-bucket admits a request after a wait for its turn, and Envoy never waits`,
		`x.yaml:11: descriptors[2].key: the descriptor has an empty key`,
		`x.yaml:12: descriptors[2].rate_limit.requests_per_unit: want a whole number from 0 to 4294967295, got "-1"`,
		`x.yaml:14: descriptors[3].ratelimit: unknown key "ratelimit"`,
		`x.yaml:20: descriptors[3].descriptors[0].rate_limit.algorithm: core: unknown algorithm "nope"`,
		`x.yaml:26: descriptors[4]: duplicate descriptor d.a (also at line 3)`,
		`x.yaml:31: descriptors[5].rate_limit.limits[0]: the same rate as descriptors[5].rate_limit (1 per second)`,
		`x.yaml:32: a second YAML document`,
	}
	var got []string
	if err != nil {
		got = strings.Split(err.Error(), "\n")
	}
	if len(got) != len(want) {
		t.Fatalf("%d errors, want %d:\n%s", len(got), len(want), err)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d:\ngot  %s\nwant %s", i, got[i], want[i])
		}
	}
	var pe *Error
	if !errors.As(err, &pe) || pe.Line != 4 {
		t.Errorf("errors.As: %#v, want the first *Error", pe)
	}

	// A merged anchor's error is reported once, at the anchor.
	_, err = Parse("m.yaml", []byte("domain: d\ndescriptors:\n  - key: a\n    rate_limit: &r {unit: second, requests_per_unit: 1, color: red}\n  - key: b\n    rate_limit: {<<: *r}\n"))
	if err == nil || strings.Count(err.Error(), "\n") != 0 || !strings.HasPrefix(err.Error(), `m.yaml:4: descriptors[0].rate_limit.color: unknown key "color"`) {
		t.Errorf("a merged error: %v", err)
	}

	// A file of many errors: the first maxErrors, then how many more.
	var b strings.Builder
	b.WriteString("domain: d\ndescriptors:\n")
	for i := range maxErrors + 20 {
		fmt.Fprintf(&b, "  - key: k%d\n    shadow_mode: maybe\n", i)
	}
	_, err = Parse("many.yaml", []byte(b.String()))
	lines := strings.Split(fmt.Sprint(err), "\n")
	if len(lines) != maxErrors+1 || lines[maxErrors] != fmt.Sprintf("many.yaml:%d: 20 more errors from here on; fix the ones above first", 4+2*maxErrors) {
		t.Errorf("%d errors, the last %q", len(lines), lines[len(lines)-1])
	}
}

// TestLoadEveryError: Load returns every error of every file, one error
// each.
func TestLoadEveryError(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), "domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight}\n  - key: l\n    shadow_mode: maybe\n")
	writeFile(t, filepath.Join(dir, "b.yaml"), "domain: b\ndescriptors:\n  - key: k\n    rate_limit: {unit: day, requests_per_unit: 1, burst: 2}\n")
	writeFile(t, filepath.Join(dir, "c.yaml"), "domain: c\ndescriptors:\n  - key: k\n    rate_limit: {unit: day, requests_per_unit: 1}\n")
	c, errs := Load(dir)
	want := []string{
		filepath.Join(dir, "a.yaml") + ":4: descriptors[0].rate_limit.unit:",
		filepath.Join(dir, "a.yaml") + ":6: descriptors[1].shadow_mode:",
		filepath.Join(dir, "b.yaml") + ":4: descriptors[0].rate_limit.burst:",
	}
	if len(errs) != len(want) {
		t.Fatalf("errors %v, want %d", errs, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(errs[i].Error(), w) {
			t.Errorf("error %d: %v, want %s...", i, errs[i], w)
		}
	}
	if len(c.Domains()) != 1 || c.Domain("c") == nil {
		t.Errorf("domains %v, want c alone", c.Domains())
	}
}

// TestCheckRules: a rule the check refuses keeps its file out, with an
// error at the rule's rate_limit; the other files load. Watch keeps the
// file's last good version, and Of leaves the domain out.
func TestCheckRules(t *testing.T) {
	noYears := CheckRules(func(r *Rule) error {
		for _, l := range r.Limits {
			if l.Period > 30*24*time.Hour {
				return fmt.Errorf("the store takes no limit longer than 30 days, and %v is", l)
			}
		}
		return nil
	})
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), "domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: day, requests_per_unit: 1}\n")
	const yearly = "domain: b\ndescriptors:\n  - key: k\n    rate_limit: {unit: day, requests_per_unit: 1}\n  - key: y\n    descriptors:\n      - key: z\n        rate_limit:\n          unit: year\n          requests_per_unit: 1\n"
	writeFile(t, filepath.Join(dir, "b.yaml"), yearly)
	c, errs := Load(dir, noYears)
	want := filepath.Join(dir, "b.yaml") + ":9: descriptors[1].descriptors[0].rate_limit: the store takes no limit longer than 30 days"
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), want) {
		t.Fatalf("errors %v, want one: %s", errs, want)
	}
	if c.Domain("a") == nil || c.Domain("b") != nil {
		t.Errorf("domains %v, want a alone", c.Domains())
	}
	if c, errs := Load(dir); len(errs) != 0 || len(c.Domains()) != 2 {
		t.Errorf("without a check: %v, %v", c.Domains(), errs)
	}

	// Watch: b.yaml good, then refused: its good version stays.
	writeFile(t, filepath.Join(dir, "b.yaml"), "domain: b\ndescriptors:\n  - key: k\n    rate_limit: {unit: day, requests_per_unit: 1}\n")
	w, err := Watch(dir, nil, noYears)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	writeFile(t, filepath.Join(dir, "b.yaml"), yearly)
	errs = w.Reload()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "rate_limit: the store takes no limit") || !strings.Contains(errs[0].Error(), "last good version stays") {
		t.Fatalf("reload: %v", errs)
	}
	if w.Config().Match("b", e("k=1")) == nil || w.Config().Match("b", e("y=1", "z=2")) != nil {
		t.Error("b.yaml's last good version is not the one in force")
	}

	d, err := Parse("b.yaml", []byte(yearly))
	if err != nil {
		t.Fatal(err)
	}
	c, err = Of([]*Domain{d}, noYears)
	if err == nil || !strings.HasPrefix(err.Error(), "b.yaml:9: ") || len(c.Domains()) != 0 {
		t.Errorf("Of: %v, %v", c.Domains(), err)
	}
}

// TestNotRegular: a named pipe among the files is reported and skipped,
// and does not block the load (it did: the read waited for a writer); a
// link to a file loads.
func TestNotRegular(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), "domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: day, requests_per_unit: 1}\n")
	other := t.TempDir()
	writeFile(t, filepath.Join(other, "real.yaml"), "domain: b\ndescriptors:\n  - key: k\n    rate_limit: {unit: day, requests_per_unit: 2}\n")
	if err := os.Symlink(filepath.Join(other, "real.yaml"), filepath.Join(dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"c.yaml", "notes.fifo"} {
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
			t.Skipf("no named pipes here: %v", err)
		}
	}
	type result struct {
		c    *Config
		errs []error
	}
	done := make(chan result, 1)
	go func() {
		c, errs := Load(dir)
		done <- result{c, errs}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		// Let the load go: open the pipe for writing, and close it.
		if f, err := os.OpenFile(filepath.Join(dir, "c.yaml"), os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("Load blocked on a named pipe")
	}
	if len(r.errs) != 1 || !strings.HasPrefix(r.errs[0].Error(), filepath.Join(dir, "c.yaml")+": not a regular file") {
		t.Fatalf("errors %v, want c.yaml's alone", r.errs)
	}
	if r.c.Domain("a") == nil || r.c.Match("b", e("k=1")).RequestsPerUnit != 2 {
		t.Errorf("domains %v, want a and b (a link)", r.c.Domains())
	}
	if _, err := readFile(filepath.Join(dir, "c.yaml")); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("readFile of a pipe: %v", err)
	}
}

// TestReadDotFiles: files whose names start with '.' load with
// ReadDotFiles alone; directories of such names never do.
func TestReadDotFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), "domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: day, requests_per_unit: 1}\n")
	writeFile(t, filepath.Join(dir, ".b.yaml"), "domain: b\ndescriptors:\n  - key: k\n    rate_limit: {unit: day, requests_per_unit: 1}\n")
	writeFile(t, filepath.Join(dir, ".c.yaml.swp"), "not yaml")
	if err := os.Mkdir(filepath.Join(dir, "..2026_01_01"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "..2026_01_01", "a.yaml"), "domain: a\ndescriptors: []\n")
	if err := os.Symlink("..2026_01_01", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		opts    []Option
		domains string
	}{
		{nil, "a"},
		{[]Option{ReadDotFiles()}, "a b"},
	} {
		c, errs := Load(dir, tc.opts...)
		var names []string
		for _, d := range c.Domains() {
			names = append(names, d.Name)
		}
		if len(errs) != 0 || strings.Join(names, " ") != tc.domains {
			t.Errorf("options %d: domains %v, errors %v; want %s", len(tc.opts), names, errs, tc.domains)
		}
	}
	if !watched(".b.yaml", true) || watched(".b.yaml", false) || !watched("..data", false) || watched(".b.yaml.swp", true) {
		t.Error("watched: dot files")
	}
}

// TestWatchRoot: with WatchRoot, a deployment that swaps the root's link
// to a new version of the tree reloads, and the new tree's changes reload
// after it.
func TestWatchRoot(t *testing.T) {
	base := t.TempDir()
	version := func(name string, n int) {
		cfg := filepath.Join(base, name, "ratelimit", "config")
		if err := os.MkdirAll(cfg, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(cfg, "d.yaml"), fmt.Sprintf("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: day, requests_per_unit: %d}\n", n))
	}
	// swap points current at name, as ln -sfn does: a new link renamed
	// over the old one.
	swap := func(name string) {
		tmp := filepath.Join(base, "current.tmp")
		if err := os.Symlink(name, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(base, "current")); err != nil {
			t.Fatal(err)
		}
	}
	version("v1", 1)
	version("v2", 2)
	swap("v1")
	root := filepath.Join(base, "current")
	dir := filepath.Join(root, "ratelimit", "config")

	reloads := make(chan uint32, 16)
	w, err := Watch(dir, func(c *Config, errs []error) {
		if r := c.Match("d", e("k=x")); r != nil && len(errs) == 0 {
			reloads <- r.RequestsPerUnit
		}
	}, WatchRoot(root), withDebounce(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	wait := func(want uint32) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case got := <-reloads:
				if got == want {
					return
				}
			case <-deadline:
				t.Fatalf("no reload to %d within 30 s", want)
			}
		}
	}
	wait(1)
	swap("v2")
	wait(2)
	// The watch follows the link: a change in v2 reloads.
	writeFile(t, filepath.Join(base, "v2", "ratelimit", "config", "d.yaml"), "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: day, requests_per_unit: 3}\n")
	wait(3)

	if _, err := Watch(dir, nil, WatchRoot(filepath.Join(base, "v1"))); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Errorf("a root not above the directory: %v", err)
	}
}

// TestLongKeyParts: a key or value longer than MaxKeyPart is held in the
// state's key as its digest; shorter ones as they were.
func TestLongKeyParts(t *testing.T) {
	d, err := Parse("k.yaml", []byte("domain: d\ndescriptors:\n  - key: path\n    rate_limit: {unit: day, requests_per_unit: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := d.Match(e("path=x"))
	huge := strings.Repeat("a", 1<<20)
	long := strings.Repeat("b", MaxKeyPart+1)
	for _, tc := range []struct {
		name, value, want string
	}{
		{"short", "/api|v=1", `d|path=/api\|v\=1`},
		{"as long as the bound", strings.Repeat("c", MaxKeyPart), "d|path=" + strings.Repeat("c", MaxKeyPart)},
		// sha256 of 129 'b's and of 2^20 'a's, their first 16 bytes.
		{"one byte longer", long, `d|path=\#` + "75c76be2aed2772327536dc2fa8759d1"},
		{"1 MB", huge, `d|path=\#` + "9bc1b2a288b26af7257a36277ae3816a"},
		{"a value that looks like a digest", `\#75c76be2aed2772327536dc2fa8759d1`, `d|path=\\#75c76be2aed2772327536dc2fa8759d1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.Key([]Entry{{Key: "path", Value: tc.value}}); got != tc.want {
				t.Errorf("key %.80q, want %.80q", got, tc.want)
			}
		})
	}
	// A long key is hashed as a long value is, and the two digests differ.
	k := (&Rule{Domain: "d"}).Key([]Entry{{Key: long, Value: "v"}, {Key: "w", Value: long + "x"}})
	if len(k) != len("d|")+34+len("=v|w=")+34 || !strings.HasPrefix(k, `d|\#75c76be2aed2772327536dc2fa8759d1=v|w=\#`) || strings.HasSuffix(k, "75c76be2aed2772327536dc2fa8759d1") {
		t.Errorf("long key and value: %q", k)
	}
}
