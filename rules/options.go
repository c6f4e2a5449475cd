package rules

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/keyfunc"
)

// Option configures a [Set].
type Option func(*options)

type options struct {
	core     []core.Option
	http     []httpmw.Option
	keys     map[string]keyfunc.Func
	onReload func(error) // nil: log to slog.Default()
	debounce time.Duration
	errs     []string
}

// defaultDebounce is how long [Watch] waits after the last change it saw
// in the file's directory before it reloads, so that an editor's
// write-rename-chmod sequence causes one reload, not three.
const defaultDebounce = 100 * time.Millisecond

func defaultOptions() options {
	return options{debounce: defaultDebounce}
}

func (o *options) fail(format string, args ...any) {
	o.errs = append(o.errs, fmt.Sprintf(format, args...))
}

// WithCoreOptions passes opts to every limiter the rules make (core.New or
// core.NewStack), after the rule's own algorithm options: a clock for
// tests, a capacity, a full policy.
func WithCoreOptions(opts ...core.Option) Option {
	return func(o *options) { o.core = append(o.core, opts...) }
}

// WithHTTPOptions passes opts to every rule's httpmw.Limiter, before the
// rule's own cost and shadow settings: an observer (which sees every
// request the rules check), a header style, a deny or error handler, a
// failure mode.
func WithHTTPOptions(opts ...httpmw.Option) Option {
	return func(o *options) { o.http = append(o.http, opts...) }
}

// WithKey registers a key part under name for HTTP, so that rules may say
// key: name (or join it: ip+name). name is lower-case letters, digits, -
// and _, starting with a letter, and must not be one of the built-in
// parts path, method and global. It may be ip: that replaces the built-in
// client address (the socket peer, no proxy header believed), as behind
// a load balancer:
//
//	rules.WithKey("ip", keyfunc.MustClientIP(keyfunc.WithTrustedProxies("10.0.0.0/8")))
func WithKey(name string, f keyfunc.Func) Option {
	return func(o *options) {
		switch {
		case !validKeyName(name):
			o.fail("WithKey(%q): a key name is lower-case letters, digits, - and _, starting with a letter", name)
		case name == keyPath || name == keyMethod || name == keyGlobal:
			o.fail("WithKey(%q): %s is built in; choose another name", name, name)
		case f == nil:
			o.fail("WithKey(%q, nil): give a key function", name)
		default:
			if o.keys == nil {
				o.keys = map[string]keyfunc.Func{}
			}
			o.keys[name] = f
		}
	}
}

// WithOnReload calls f after every reload that [Set.Reload], [Set.Apply]
// or the watch attempted, with nil when the new rules took effect and the
// error otherwise (an *Error for a bad file), instead of logging it. By
// default a reload is logged to slog.Default(): a successful one at Info,
// with how many rules kept their limiter's state, a failed one at Error.
// f runs on the reloading goroutine; keep it short.
func WithOnReload(f func(err error)) Option {
	return func(o *options) {
		if f == nil {
			o.fail("WithOnReload(nil); leave the option out to log reloads to slog.Default()")
		}
		o.onReload = f
	}
}

// logReload is the default of [WithOnReload].
func (s *Set) logReload(err error) {
	if err != nil {
		slog.Default().Error("rules: reload failed; the rules in force stay", "file", s.file, "err", err)
		return
	}
	t := s.cur.Load()
	kept := 0
	for _, c := range t.rules {
		if c.kept {
			kept++
		}
	}
	slog.Default().Info("rules: reloaded", "file", s.file, "rules", len(t.rules), "kept", kept)
}
