package rlsconfig

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/floodgate/floodgate/internal/dirwatch"
)

// Watcher keeps a directory's configuration in force, reloading it when
// its files change. It is safe for concurrent use.
type Watcher struct {
	dir      string
	o        options
	onReload func(*Config, []error)
	cur      atomic.Pointer[Config]

	mu   sync.Mutex         // serialises reloads
	good map[string]*Domain // each file's last good domain, by path
	dw   *dirwatch.Watcher
}

// Watch loads dir as [Load] does and keeps it in force: when a
// configuration file of dir changes, appears or goes, dir is loaded again
// (after 100 ms without further changes) and the new configuration
// replaces the old at once; requests that already hold a Config or a Rule
// finish with it. A file that has become invalid keeps its last good
// version in force (a file never valid stays out), and everything else
// takes effect.
//
// onReload, if not nil, is called after each load, the first one
// included, before Watch returns: with the Config now in force and that
// load's errors (nil when all files are valid); an error of a file that
// keeps its last good version says so. It runs on the watch's goroutine
// (or Reload's caller) and must not call Reload or Close.
//
// With [WatchRoot], the directory above root is watched too, and a change
// to root's name there (a link swapped) reloads dir, watched again where
// its path now leads.
//
// Watch fails only when dir (or root's parent) cannot be watched, or root
// is neither dir nor a directory above it. [Watcher.Close] ends the
// watch.
func Watch(dir string, onReload func(*Config, []error), opts ...Option) (*Watcher, error) {
	w := &Watcher{dir: dir, o: defaultOptions(opts), onReload: onReload, good: map[string]*Domain{}}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("rlsconfig: %w", err)
	}
	match := func(name string) bool { return filepath.Dir(name) == abs && watched(filepath.Base(name), w.o.dots) }
	var also []string
	if w.o.root != "" {
		root, err := filepath.Abs(w.o.root)
		if err != nil {
			return nil, fmt.Errorf("rlsconfig: %w", err)
		}
		if rel, err := filepath.Rel(root, abs); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil, fmt.Errorf("rlsconfig: WatchRoot(%q): it is neither %s nor a directory above it; give the directory whose link a deployment swaps", w.o.root, dir)
		}
		also = []string{filepath.Dir(root)}
		inDir := match
		match = func(name string) bool { return name == root || inDir(name) }
	}
	w.Reload()
	dw, err := dirwatch.Watch(abs, w.o.debounce, match, func() { w.Reload() }, func(err error) {
		w.report(w.Config(), []error{&Error{File: dir, Err: fmt.Errorf("watching the directory: %w", err)}})
	}, also...)
	if err != nil {
		return nil, fmt.Errorf("rlsconfig: %w", err)
	}
	w.dw = dw
	return w, nil
}

// watched reports whether a change to the file base of the directory may
// change the configuration: a configuration file, or Kubernetes' "..data"
// swap. dots: files whose names start with '.' are read.
func watched(base string, dots bool) bool {
	ext := filepath.Ext(base)
	return strings.HasPrefix(base, "..") || (dots || !strings.HasPrefix(base, ".")) && (ext == ".yaml" || ext == ".yml")
}

// Config returns the configuration in force.
func (w *Watcher) Config() *Config { return w.cur.Load() }

// Reload loads the directory now, as a change would, and returns the
// load's errors.
func (w *Watcher) Reload() []error {
	w.mu.Lock()
	defer w.mu.Unlock()
	files, errs := readDir(w.dir, &w.o)
	for i, f := range files {
		if f.dom != nil {
			continue
		}
		if d := w.good[f.path]; d != nil {
			files[i].dom = d
			files[i].errs = nil
			for _, err := range f.errs {
				errs = append(errs, keptError{err})
			}
		}
	}
	c, more := assemble(files, w.o.merge)
	errs = noFiles(w.dir, files, append(errs, more...))
	good := map[string]*Domain{}
	for _, f := range files {
		if f.dom != nil {
			good[f.path] = f.dom
		}
	}
	w.good = good
	w.cur.Store(c)
	if len(errs) == 0 {
		errs = nil
	}
	w.report(c, errs)
	return errs
}

func (w *Watcher) report(c *Config, errs []error) {
	if w.onReload != nil {
		w.onReload(c, errs)
	}
}

// keptError is a file's error when its last good version stays in force.
type keptError struct{ err error }

func (e keptError) Error() string {
	return e.err.Error() + " (the file's last good version stays in force)"
}

func (e keptError) Unwrap() error { return e.err }

// Close ends the watch and waits until a reload it started returns; the
// configuration in force stays. It is safe to call more than once.
func (w *Watcher) Close() error {
	if w.dw == nil {
		return errors.New("rlsconfig: the watch did not start")
	}
	return w.dw.Close()
}
