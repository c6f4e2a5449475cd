// Package outputtest lets an example's test read what the program prints
// while it still runs: the program's goroutine writes to a [Lines], and
// the test waits for the line it needs (the address of a server it
// started, say).
package outputtest

import (
	"bytes"
	"regexp"
	"sync"
	"testing"
	"time"
)

// Lines is the output of a program, written by one goroutine and read by
// another. It is safe for concurrent use.
type Lines struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	more chan struct{}
}

// New returns an empty Lines.
func New() *Lines { return &Lines{more: make(chan struct{}, 1)} }

// Write adds p to the output and wakes a WaitFor.
func (l *Lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case l.more <- struct{}{}:
	default:
	}
	return l.buf.Write(p)
}

// WaitFor waits until the output matches re, for up to 20 seconds, and
// returns re's first group; the test fails, showing the output, if it
// does not come.
func (l *Lines) WaitFor(t testing.TB, re *regexp.Regexp) string {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		l.mu.Lock()
		text := l.buf.String()
		l.mu.Unlock()
		if m := re.FindStringSubmatch(text); len(m) > 1 {
			return m[1]
		}
		select {
		case <-l.more:
		case <-timeout:
			t.Fatalf("no %s in the output:\n%s", re, text)
		}
	}
}
