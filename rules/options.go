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
	ip       []keyfunc.Option
	keys     map[string]keyfunc.Func
	observer core.Observer
	logger   *slog.Logger
	onReload func(error)
	sighup   bool
	debounce time.Duration
	errs     []string
}

// DefaultDebounce is how long [Watch] waits after the last change it saw
// in the file's directory before it reloads, so that an editor's
// write-rename-chmod sequence causes one reload, not three.
const DefaultDebounce = 100 * time.Millisecond

func defaultOptions() options {
	return options{sighup: true, debounce: DefaultDebounce}
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
// rule's own cost and shadow settings: an observer, a header style, a deny
// or error handler, a failure mode.
func WithHTTPOptions(opts ...httpmw.Option) Option {
	return func(o *options) { o.http = append(o.http, opts...) }
}

// WithClientIP sets the options of the keyfunc.ClientIP that the "ip" key
// part uses over HTTP, such as keyfunc.WithTrustedProxies behind a load
// balancer (default: the socket peer, no proxy header believed).
func WithClientIP(opts ...keyfunc.Option) Option {
	return func(o *options) { o.ip = append(o.ip, opts...) }
}

// WithKey registers a key part under name for HTTP, so that rules may say
// key: name (or join it: ip+name). name is lower-case letters, digits, -
// and _, starting with a letter, and must not be a built-in part (ip,
// path, method, global).
func WithKey(name string, f keyfunc.Func) Option {
	return func(o *options) {
		switch {
		case !validKeyName(name):
			o.fail("WithKey(%q): a key name is lower-case letters, digits, - and _, starting with a letter", name)
		case name == keyIP || name == keyPath || name == keyMethod || name == keyGlobal:
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

// WithObserver reports every reload that fails to obs, as a core.Event
// with Transport "rules", Outcome core.OutcomeError and Err the *Error
// that says where the file is wrong. Requests are observed through
// httpmw.WithObserver in [WithHTTPOptions], not here.
func WithObserver(obs core.Observer) Option {
	return func(o *options) {
		if obs == nil {
			o.fail("WithObserver(nil); leave the option out")
		}
		o.observer = obs
	}
}

// WithLogger logs reloads to l: a successful one at Info, with how many
// rules kept their limiter's state, a failed one at Error (default
// slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l == nil {
			o.fail("WithLogger(nil); leave the option out for slog.Default()")
		}
		o.logger = l
	}
}

// WithOnReload calls f after every reload that [Set.Reload], the watch or
// SIGHUP attempted, with nil when the new rules took effect and the error
// otherwise. It runs on the reloading goroutine; keep it short.
func WithOnReload(f func(err error)) Option {
	return func(o *options) {
		if f == nil {
			o.fail("WithOnReload(nil); leave the option out")
		}
		o.onReload = f
	}
}

// WithSIGHUP turns reloading on SIGHUP on or off in [Watch] (default on).
// While a Set watches with it on, SIGHUP no longer ends the process.
func WithSIGHUP(on bool) Option { return func(o *options) { o.sighup = on } }

// WithDebounce sets how long [Watch] waits for the file to settle before it
// reloads (default [DefaultDebounce]; from 1ms to 10s).
func WithDebounce(d time.Duration) Option {
	return func(o *options) {
		if d < time.Millisecond || d > 10*time.Second {
			o.fail("WithDebounce(%v): want 1ms to 10s", d)
		}
		o.debounce = d
	}
}
