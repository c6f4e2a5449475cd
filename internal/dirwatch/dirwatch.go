// Package dirwatch watches a directory for changes to some of its names and
// calls a function once they settle. Packages rules and rlsconfig reload
// their files with it.
package dirwatch

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watcher runs fire after the names it watches change; see [Watch].
type Watcher struct {
	fs   *fsnotify.Watcher
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// Watch watches dir and, when an event comes for a name (a path inside
// dir) for which match reports true, starts or restarts a timer of
// debounce; when the timer ends, fire runs. fire runs on the watcher's
// goroutine, so two never overlap, and events that come while it runs
// start the timer again. Errors of the watch itself go to onErr.
//
// It watches the directory rather than files, since editors and
// configuration tools replace a file by renaming another over it, and
// Kubernetes swaps a ConfigMap's files by renaming a "..data" link: match
// sees those names too.
//
// The directories in also are watched too, their events going to match
// as dir's do: a directory above dir, where a link on the way to dir may
// be replaced (a deployment swapping a "current" link to a new version).
// A watch stays on the directory it began on, so after such an event has
// matched, dir is watched again, where its path now leads, before fire
// runs.
func Watch(dir string, debounce time.Duration, match func(name string) bool, fire func(), onErr func(error), also ...string) (*Watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", dir, err)
	}
	for _, d := range append([]string{dir}, also...) {
		if err := fw.Add(d); err != nil {
			fw.Close()
			return nil, fmt.Errorf("watching %s: %w", d, err)
		}
	}
	w := &Watcher{fs: fw, stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop(filepath.Clean(dir), debounce, match, fire, onErr)
	return w, nil
}

func (w *Watcher) loop(dir string, debounce time.Duration, match func(string) bool, fire func(), onErr func(error)) {
	defer close(w.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	rewatch := false // an event of another directory than dir matched
	for {
		select {
		case <-w.stop:
			return
		case ev, ok := <-w.fs.Events:
			if !ok {
				return
			}
			if match(ev.Name) {
				rewatch = rewatch || filepath.Dir(ev.Name) != dir
				timer.Reset(debounce)
			}
		case err, ok := <-w.fs.Errors:
			if !ok {
				return
			}
			onErr(err)
		case <-timer.C:
			if rewatch {
				rewatch = false
				if err := w.rewatch(dir); err != nil {
					onErr(err)
				}
			}
			fire()
		}
	}
}

// rewatch watches dir again, where its path now leads.
func (w *Watcher) rewatch(dir string) error {
	// The old watch may be gone already, with its directory.
	if err := w.fs.Remove(dir); err != nil && !errors.Is(err, fsnotify.ErrNonExistentWatch) {
		return fmt.Errorf("watching %s again: %w", dir, err)
	}
	if err := w.fs.Add(dir); err != nil {
		return fmt.Errorf("watching %s again: %w", dir, err)
	}
	return nil
}

// Close ends the watch and waits until fire, if it is running, returns.
// It is safe to call more than once; calls after the first return nil.
func (w *Watcher) Close() error {
	var err error
	w.once.Do(func() {
		close(w.stop)
		<-w.done
		err = w.fs.Close()
	})
	return err
}
