package rules

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/floodgate/floodgate/internal/dirwatch"
	"github.com/floodgate/floodgate/keyfunc"
)

// Set is a rules file in force: its compiled rules, which [Set.Reload],
// [Watch] or [Set.Apply] replace atomically. Requests read the rules once,
// when they start, so that a request in flight finishes under the rules it
// started with. A Set is safe for concurrent use.
type Set struct {
	file string // the path, or the name given to New
	disk bool   // file is a path to read on Reload
	o    options
	ip   keyfunc.Func

	mu       sync.Mutex // serialises reloads and Attach
	cur      atomic.Pointer[Table]
	seen     []byte // the contents last tried, so that the watch skips unchanged files
	builders []func(*Table) (any, error)

	watch *dirwatch.Watcher // nil unless Watch started one
}

// Open reads, checks and compiles the rules file at path. Errors say where
// the file is wrong (an *Error) or which option is. [Set.Reload] reads the
// file again; [Watch] also reloads it when it changes.
func Open(path string, opts ...Option) (*Set, error) {
	s, err := newSet(path, true, opts)
	if err != nil {
		return nil, err
	}
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	if err := s.apply(data); err != nil {
		return nil, err
	}
	return s, nil
}

// New compiles rules from data, as if read from a file named name (which
// errors and logs quote). Such a Set has no file to reload: change its
// rules with [Set.Apply].
func New(name string, data []byte, opts ...Option) (*Set, error) {
	s, err := newSet(name, false, opts)
	if err != nil {
		return nil, err
	}
	if err := s.apply(data); err != nil {
		return nil, err
	}
	return s, nil
}

func newSet(file string, disk bool, opts []Option) (*Set, error) {
	s := &Set{file: file, disk: disk, o: defaultOptions()}
	for _, opt := range opts {
		opt(&s.o)
	}
	if len(s.o.errs) > 0 {
		return nil, errors.New("rules: " + strings.Join(s.o.errs, "; "))
	}
	s.ip = s.o.keys[keyIP]
	if s.ip == nil {
		ip, err := keyfunc.ClientIP()
		if err != nil {
			return nil, fmt.Errorf("rules: the client IP key: %w", err)
		}
		s.ip = ip
	}
	return s, nil
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Err: err}
	}
	defer f.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(io.LimitReader(f, maxFileSize+1)); err != nil {
		return nil, &Error{File: path, Err: err}
	}
	return b.Bytes(), nil
}

// Table returns the rules in force.
func (s *Set) Table() *Table { return s.cur.Load() }

// Reload reads the file again and, if it is valid, puts its rules in
// force; if not, the rules in force stay, and the error (an *Error for a
// bad file) is returned and reported ([WithOnReload]). Rules whose
// policy did not change keep their limiters, and so their keys' state:
// the same name, limits, algorithm and its options, and key. A Set made by
// [New] has no file: Reload fails.
func (s *Set) Reload() error {
	if !s.disk {
		return fmt.Errorf("rules: %s was not read from a file; use Apply", s.file)
	}
	data, err := readFile(s.file)
	if err != nil {
		s.report(err)
		return err
	}
	return s.Apply(data)
}

// Apply puts the rules in data in force, as Reload does with the file's
// contents.
func (s *Set) Apply(data []byte) error {
	err := s.apply(data)
	s.report(err)
	return err
}

// reloadIfChanged is the watch's reload: it skips contents it tried last.
func (s *Set) reloadIfChanged() {
	data, err := readFile(s.file)
	if err != nil {
		s.report(err)
		return
	}
	s.mu.Lock()
	same := s.seen != nil && bytes.Equal(s.seen, data)
	s.mu.Unlock()
	if !same {
		s.Apply(data)
	}
}

func (s *Set) apply(data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen[:0:0], data...)
	rs, err := parse(s.file, data)
	if err != nil {
		return err
	}
	t, err := s.compile(rs, s.cur.Load())
	if err != nil {
		return err
	}
	for _, b := range s.builders {
		v, err := b(t)
		if err != nil {
			return err
		}
		t.attached = append(t.attached, v)
	}
	s.cur.Store(t)
	return nil
}

// report tells [WithOnReload]'s function, or the log, how a reload went.
func (s *Set) report(err error) {
	if s.o.onReload != nil {
		s.o.onReload(err)
		return
	}
	s.logReload(err)
}

// Attach runs build on the rules in force and then on every Table a
// reload compiles, before the Table takes effect, and keeps what it
// returns in the Table; get returns what build made of a Table. An error
// from build on a reload rejects the new rules as a bad file would.
// Adapters for other transports (package grpcrules) build their per-rule
// state with it.
func (s *Set) Attach(build func(*Table) (any, error)) (get func(*Table) any, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.cur.Load()
	v, err := build(old)
	if err != nil {
		return nil, err
	}
	t := *old
	t.attached = append(append([]any(nil), old.attached...), v)
	s.builders = append(s.builders, build)
	s.cur.Store(&t)
	slot := len(t.attached) - 1
	return func(t *Table) any { return t.attached[slot] }, nil
}
