package rules

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/floodgate/floodgate/internal/dirwatch"
)

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
	clean := filepath.Clean(path)
	w, err := dirwatch.Watch(filepath.Dir(path), s.o.debounce,
		func(name string) bool {
			name = filepath.Clean(name)
			return name == clean || strings.HasPrefix(filepath.Base(name), "..")
		},
		s.reloadIfChanged,
		func(err error) {
			slog.Default().Warn("rules: watching the file's directory", "file", s.file, "err", err)
		})
	if err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	s.watch = w
	return s, nil
}

// Close ends the watch that [Watch] started, if any, and waits until no
// reload is running; the rules in force stay in force. It is safe to call
// more than once.
func (s *Set) Close() error {
	if s.watch == nil {
		return nil
	}
	return s.watch.Close()
}
