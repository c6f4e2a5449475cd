package slogobs

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/option"
)

// Observer writes a log line for each request the adapters refuse or fail
// on, sampled (the package documentation lists what is logged, at which
// level, with which attributes). Make one with [New] and hand it to an
// adapter's WithObserver. It is safe for concurrent use.
type Observer struct {
	logger    *slog.Logger
	perSecond int64 // 0: every line
	redact    func(string) string
	clock     core.Clock
	kinds     [numOutcomes][2]sampler // by outcome, shadow
	unknown   sampler                 // outcomes newer than this package
}

var _ core.Observer = (*Observer)(nil)

const numOutcomes = int(core.OutcomeShed) + 1

// sampler counts one kind of line in the current second.
type sampler struct {
	mu         sync.Mutex
	second     int64 // the clock's second being counted
	written    int64 // lines written in it
	suppressed int64 // lines dropped since the last one written
}

// take reports whether a line may be written in second now, and how many
// were dropped since the last one that was.
func (s *sampler) take(now, max int64) (ok bool, suppressed int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now != s.second {
		s.second, s.written = now, 0
	}
	if s.written >= max {
		s.suppressed++
		return false, 0
	}
	s.written++
	suppressed, s.suppressed = s.suppressed, 0
	return true, suppressed
}

// New returns an Observer that writes to logger. It fails if an option is
// invalid, if logger is nil, or if no salt can be drawn for the key hash.
func New(logger *slog.Logger, opts ...Option) (*Observer, error) {
	o := options{perSecond: DefaultMaxPerSecond, clock: core.SystemClock, errs: option.Errors{Prefix: "slogobs: "}}
	if err := option.Apply(&o, &o.errs, opts); err != nil {
		return nil, err
	}
	if logger == nil {
		return nil, errors.New("slogobs: nil logger; pass slog.Default() for the default logger")
	}
	redact := o.redact
	if redact == nil {
		var salt [16]byte
		if _, err := rand.Read(salt[:]); err != nil {
			return nil, errors.New("slogobs: drawing the salt of the key hash: " + err.Error())
		}
		redact = func(key string) string { return hashKey(salt[:], key) }
	}
	return &Observer{logger: logger, perSecond: int64(o.perSecond), redact: redact, clock: o.clock}, nil
}

// hashKey is the default redaction: the first 8 bytes of the key's
// HMAC-SHA256 under salt, in hex, so that one key gives one token
// without the key being recoverable from it.
func hashKey(salt []byte, key string) string {
	m := hmac.New(sha256.New, salt)
	m.Write([]byte(key))
	var sum [sha256.Size]byte
	return "h:" + hex.EncodeToString(m.Sum(sum[:0])[:8])
}

// LevelAllowed is the level admitted requests (allowed and shaped) are
// logged at: four below Debug, so that only a handler whose level is set
// that low writes them, sampled like every other line.
const LevelAllowed = slog.LevelDebug - 4

// level is the level of e's line, and false when e is not logged.
func (o *Observer) level(e *core.Event) (slog.Level, bool) {
	switch e.Outcome {
	case core.OutcomeAllowed, core.OutcomeShaped:
		return LevelAllowed, true
	case core.OutcomeCanceled:
		return slog.LevelDebug, true
	case core.OutcomeDenied, core.OutcomeBadKey, core.OutcomeBadCost:
		return slog.LevelInfo, true
	case core.OutcomeShed:
		return slog.LevelWarn, true // the service is short of capacity
	case core.OutcomeStoreError:
		if e.Failure == core.FailOpen {
			return slog.LevelWarn, true
		}
		return slog.LevelError, true
	}
	return slog.LevelError, true // OutcomeError, and outcomes newer than this package
}

// messages are the lines' messages by outcome.
var messages = [numOutcomes]string{
	core.OutcomeAllowed:    "rate limit: allowed",
	core.OutcomeShaped:     "rate limit: allowed after a delay",
	core.OutcomeDenied:     "rate limit: refused",
	core.OutcomeBadKey:     "rate limit: request has no usable key",
	core.OutcomeBadCost:    "rate limit: request cost is invalid",
	core.OutcomeError:      "rate limit: error",
	core.OutcomeStoreError: "rate limit: store failed",
	core.OutcomeCanceled:   "rate limit: request canceled while delayed",
	core.OutcomeShed:       "overload: request shed",
}

// Observe writes e's line, unless e is not logged, the logger is not
// enabled at its level, or the sampler drops it.
func (o *Observer) Observe(ctx context.Context, e core.Event) {
	lvl, ok := o.level(&e)
	if !ok || !o.logger.Enabled(ctx, lvl) {
		return
	}
	known := int(e.Outcome) < numOutcomes
	s := &o.unknown
	if known {
		s = &o.kinds[e.Outcome][b2i(e.Shadow)]
	}
	var suppressed int64
	if o.perSecond > 0 {
		if ok, suppressed = s.take(o.clock.Now()/int64(time.Second), o.perSecond); !ok {
			return
		}
	}
	var msg string
	switch {
	case e.Shadow && e.Outcome == core.OutcomeDenied:
		msg = "rate limit: would refuse (shadow mode, admitted)"
	case known:
		msg = messages[e.Outcome]
	default:
		msg = "rate limit: " + e.Outcome.String()
	}
	attrs := make([]slog.Attr, 0, 12)
	attrs = append(attrs, slog.String("outcome", e.Outcome.String()), slog.String("transport", e.Transport))
	if e.Decision.Limit.Name != "" {
		attrs = append(attrs, slog.String("limit", e.Decision.Limit.Name))
	}
	if e.Key != "" {
		attrs = append(attrs, slog.String("key", o.key(e.Key)))
	}
	if e.Cost != 0 {
		attrs = append(attrs, slog.Int("cost", e.Cost))
	}
	if e.Outcome == core.OutcomeDenied {
		attrs = append(attrs, slog.Duration("retry_after", e.Decision.RetryAfter))
	}
	if e.Decision.Delay > 0 {
		attrs = append(attrs, slog.Duration("delay", e.Decision.Delay))
	}
	if e.Held > 0 {
		attrs = append(attrs, slog.Duration("held", e.Held))
	}
	if e.Decision.Overflow {
		attrs = append(attrs, slog.Bool("overflow", true))
	}
	if e.Decision.Leased {
		attrs = append(attrs, slog.Bool("leased", true))
	}
	if e.Shadow {
		attrs = append(attrs, slog.Bool("shadow", true))
	}
	if e.Outcome == core.OutcomeStoreError {
		attrs = append(attrs, slog.String("failure", e.Failure.String()), slog.Bool("admitted", e.Admitted))
	}
	if e.Err != nil {
		text := e.Err.Error()
		// An error may quote the key (a store's message naming it): hide
		// it there too. Keys shorter than 4 bytes are left, as replacing
		// them would garble the text for nothing.
		if len(e.Key) >= 4 {
			text = strings.ReplaceAll(text, e.Key, o.redact(e.Key))
		}
		attrs = append(attrs, slog.String("error", text))
	}
	if suppressed > 0 {
		attrs = append(attrs, slog.Int64("suppressed", suppressed))
	}
	o.logger.LogAttrs(ctx, lvl, msg, attrs...)
}

func (o *Observer) key(k string) string {
	if o.redact == nil {
		return k
	}
	return o.redact(k)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
