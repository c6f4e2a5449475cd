// Package dirwatch watches a directory for changes to some of its names and
// calls a function once they settle. Packages rules and rlsconfig reload
// their files with it.
package dirwatch

import (
	"fmt"
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
func Watch(dir string, debounce time.Duration, match func(name string) bool, fire func(), onErr func(error)) (*Watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", dir, err)
	}
	if err := fw.Add(dir); err != nil {
		fw.Close()
		return nil, fmt.Errorf("watching %s: %w", dir, err)
	}
	w := &Watcher{fs: fw, stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop(debounce, match, fire, onErr)
	return w, nil
}

func (w *Watcher) loop(debounce time.Duration, match func(string) bool, fire func(), onErr func(error)) {
	defer close(w.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-w.stop:
			return
		case ev, ok := <-w.fs.Events:
			if !ok {
				return
			}
			if match(ev.Name) {
				timer.Reset(debounce)
			}
		case err, ok := <-w.fs.Errors:
			if !ok {
				return
			}
			onErr(err)
		case <-timer.C:
			fire()
		}
	}
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
