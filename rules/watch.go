package rules

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

type watcher struct {
	fs   *fsnotify.Watcher
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// Watch opens the rules file at path like [Open] and keeps it in force:
// when the file changes it is reloaded. [Set.Close] ends the watch. To
// reload on a signal as well, call [Set.Reload] when it comes:
//
//	hup := make(chan os.Signal, 1)
//	signal.Notify(hup, syscall.SIGHUP)
//	go func() {
//		for range hup {
//			set.Reload()
//		}
//	}()
//
// It watches the file's directory, not the file, since editors and
// configuration tools replace a file by renaming another over it, and
// Kubernetes swaps a ConfigMap's files by renaming a "..data" link: a
// change to the file or to a name starting with ".." starts the debounce
// (100 ms), and when it ends the file is read and, if its contents differ
// from the ones last tried, reloaded as by [Set.Reload]. Every reload is
// reported as [WithOnReload] says; a failed one keeps the rules in force.
func Watch(path string, opts ...Option) (*Set, error) {
	s, err := Open(path, opts...)
	if err != nil {
		return nil, err
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("rules: watching %s: %w", path, err)
	}
	if err := fw.Add(filepath.Dir(path)); err != nil {
		fw.Close()
		return nil, fmt.Errorf("rules: watching %s: %w", path, err)
	}
	w := &watcher{fs: fw, stop: make(chan struct{}), done: make(chan struct{})}
	s.watch = w
	go s.loop(w, filepath.Clean(path))
	return s, nil
}

func (s *Set) loop(w *watcher, path string) {
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
			if name := filepath.Clean(ev.Name); name == path || strings.HasPrefix(filepath.Base(name), "..") {
				timer.Reset(s.o.debounce)
			}
		case err, ok := <-w.fs.Errors:
			if !ok {
				return
			}
			slog.Default().Warn("rules: watching the file's directory", "file", s.file, "err", err)
		case <-timer.C:
			s.reloadIfChanged()
		}
	}
}

// Close ends the watch that [Watch] started, if any, and waits until no
// reload is running; the rules in force stay in force. It is safe to call
// more than once.
func (s *Set) Close() error {
	w := s.watch
	if w == nil {
		return nil
	}
	var err error
	w.once.Do(func() {
		close(w.stop)
		<-w.done
		err = w.fs.Close()
	})
	return err
}
