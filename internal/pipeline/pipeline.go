package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/core"
)

// Config is what an adapter hands the pipeline. Key is required; the rest
// may be left zero.
type Config[R any] struct {
	// Transport names the adapter family in observer events ("http",
	// "grpc").
	Transport string
	// Key derives the request's key. An error, or "", is never "unlimited":
	// see [Classify] for how it is answered.
	Key func(R) (string, error)
	// Cost prices the request; nil means 1 per request. 0 means free: the
	// request passes and nothing is charged. A negative cost is the cost
	// function's bug (a server fault).
	Cost func(R) (int, error)
	// Skip exempts requests before anything else runs; nil skips none.
	Skip func(R) bool
	// Failure is what a store error gets.
	Failure core.FailureMode
	// Observer hears of every request that is not skipped; nil is free.
	Observer core.Observer
	// Select picks the limiter for a request in place of the one Run is
	// given (nil: Run's for every request). A nil answer means the request
	// is not limited: it is skipped. It runs after Skip, before the key and
	// cost functions, so that a request no limit applies to needs no key.
	Select func(R) core.Limiter
	// Hold holds denials before they are answered; the zero Hold answers
	// at once.
	Hold Hold
	// Shadow runs the pipeline in shadow (dry-run) mode: every request is
	// decided, charged and observed as enforcing would, and admitted
	// whatever the outcome (see [Result.Shadow]).
	Shadow bool
}

// Pipeline runs Config's steps for each request. It is safe for concurrent
// use.
type Pipeline[R any] struct {
	c    Config[R]
	held atomic.Int64 // denials being held now
	// sleep is Sleep; tests replace it to hold without waiting.
	sleep func(context.Context, time.Duration) error
	// timing selects the requests whose latency is measured: those for
	// which a random number's low bits under it are 0 (TimingEvery - 1;
	// tests set 0 to time every request).
	timing uint32
}

// TimingEvery is how many observed requests share one latency
// measurement, on average. Reading the clock twice costs about 50 ns here
// (time.Now, time.Since), as much as a whole in-memory decision; timing
// one request in 8 brings it to a few nanoseconds per request, and a
// latency histogram built from the sample has the same shape.
const TimingEvery = 8

// New returns a Pipeline for c.
func New[R any](c Config[R]) *Pipeline[R] {
	return &Pipeline[R]{c: c, sleep: Sleep, timing: TimingEvery - 1}
}

// Result is how one request ended.
type Result struct {
	// Skipped reports that the request was exempt (the skip function, or
	// no limiter chosen by Config.Select) or free (cost 0): it was not
	// counted, gets no rate-limit fields and is not observed. Outcome is
	// then meaningless.
	Skipped bool
	// Outcome is how the request ended.
	Outcome core.Outcome
	// Decision is the limiter's answer for allowed, shaped and denied
	// requests; the zero Decision otherwise.
	Decision core.Decision
	// Key and Cost are what the limiter was asked about, as far as they
	// were found.
	Key  string
	Cost int
	// Latency is how long lim.Allow took, measured on about one request in
	// TimingEvery when an observer is set (0 on the others, and without
	// one).
	Latency time.Duration
	// Err is why no decision was made (the error outcomes); nil otherwise.
	// It is classified as [Classify] says and may hold internal details.
	Err error
	// FailedOpen reports a store error admitted under FailOpen.
	FailedOpen bool
	// Limiter is the limiter Config.Select chose, nil when Run's own was
	// asked (or none was).
	Limiter core.Limiter
	// Held is how long a denial was held before its answer (Config.Hold).
	Held time.Duration
	// Shadow reports a request in shadow mode (Config.Shadow).
	// Whatever the outcome, the request is admitted: no shaping wait, no
	// held denial, and an error (a bad key or cost, a failing key or cost
	// function, a store error) admits whatever the failure mode. Decision
	// is what enforcing would have decided; [Result.ShadowDecision] is
	// the one the caller hands on.
	//
	// What enforcing would charge is charged: an admission as usual (its
	// Lease is released when the request ends), a shaped admission keeps
	// its units reserved, a refusal and an error charge nothing, and
	// [Attach] records only the admissions enforcing would have made, so
	// that no refund gives back units that were never taken.
	Shadow bool
}

// Admitted reports whether the request goes on to the handler: skipped,
// allowed, shaped (its wait is over), or a store error under FailOpen.
func (r *Result) Admitted() bool {
	return r.Skipped || r.FailedOpen || r.Shadow || r.Outcome == core.OutcomeAllowed || r.Outcome == core.OutcomeShaped
}

// Run runs the whole pipeline for req against lim and sets *res to how it
// ended (res is an out-parameter so that the result is not copied on its
// way up). cost > 0 is a fixed cost that replaces the cost function (a gRPC
// method's own cost); 0 asks the cost function. A shaped request waits
// here for its turn, and a denial is held here (Config.Hold).
//
// A request that is not admitted gives back what floodgates outside this
// one charged it, when they recorded their charge in ctx (see [Attach]).
func (p *Pipeline[R]) Run(ctx context.Context, req R, lim core.Limiter, cost int, res *Result) {
	p.run(ctx, req, lim, cost, res)
	if !res.Admitted() {
		undoOuter(ctx)
	}
}

func (p *Pipeline[R]) run(ctx context.Context, req R, lim core.Limiter, cost int, res *Result) {
	*res = Result{Shadow: p.c.Shadow}
	if p.c.Skip != nil && p.c.Skip(req) {
		res.Skipped = true
		return
	}
	if p.c.Select != nil {
		l := p.c.Select(req)
		if l == nil {
			res.Skipped = true
			return
		}
		lim, res.Limiter = l, l
	}
	key, err := p.c.Key(req)
	if err != nil {
		p.fail(ctx, res, fmt.Errorf("%w: %w", core.ErrKey, err))
		return
	}
	if key == "" {
		p.fail(ctx, res, core.ErrEmptyKey)
		return
	}
	res.Key = key
	if cost <= 0 && p.c.Cost == nil {
		cost = 1 // the usual case, without a call
	} else if cost <= 0 {
		if cost, err = p.cost(req); err != nil {
			p.fail(ctx, res, err)
			return
		}
		if cost == 0 {
			res.Skipped = true
			return
		}
	}
	p.decide(ctx, lim, key, cost, res)
}

func (p *Pipeline[R]) cost(req R) (int, error) {
	if p.c.Cost == nil {
		return 1, nil
	}
	c, err := p.c.Cost(req)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%w: %w", core.ErrCost, err)
	case c < 0:
		return 0, fmt.Errorf("%w: cost function returned %d; return 0 for a free request, or an error", core.ErrCost, c)
	}
	return c, nil
}

// Decide asks lim about key and cost (>= 1), finishes the pipeline (the
// failure mode, the shaping wait and the observer) and sets *res. grpcmw
// calls it directly for each message of a metered stream, whose key was
// found when the stream opened.
func (p *Pipeline[R]) Decide(ctx context.Context, lim core.Limiter, key string, cost int, res *Result) {
	res.Shadow = p.c.Shadow
	p.decide(ctx, lim, key, cost, res)
}

// decide is Decide once res.Shadow says whether the pipeline is in shadow
// mode. Nothing of a shadow request is enforced: no shaping wait, no hold,
// and an error admits whatever the failure mode.
func (p *Pipeline[R]) decide(ctx context.Context, lim core.Limiter, key string, cost int, res *Result) {
	res.Key, res.Cost = key, cost
	var err error
	if p.c.Observer == nil {
		// Nothing to time: the limiter straight away.
		res.Decision, err = lim.Allow(ctx, key, cost)
	} else {
		err = p.allow(ctx, lim, res)
	}
	if err != nil {
		p.fail(ctx, res, err)
		return
	}
	switch {
	case res.Decision.Shed:
		// An overload guard refused: answered at once, never held (a held
		// request keeps what the service is short of).
		res.Outcome = core.OutcomeShed
	case !res.Decision.Allowed:
		res.Outcome = core.OutcomeDenied
		if p.c.Hold.Max > 0 && !res.Shadow {
			p.hold(ctx, res)
		}
	case res.Decision.Delay > 0:
		res.Outcome = core.OutcomeShaped
		if res.Shadow {
			break
		}
		if err := p.sleep(ctx, res.Decision.Delay); err != nil {
			rerr := Undo(ctx, lim, key, cost, res.Decision.Lease)
			p.fail(ctx, res, errors.Join(fmt.Errorf("%w: %w", core.ErrWaitCanceled, context.Cause(ctx)), rerr))
			return
		}
	default:
		res.Outcome = core.OutcomeAllowed
	}
	if p.c.Observer != nil {
		p.observe(ctx, res, true, nil)
	}
}

// allow asks lim about res.Key and res.Cost and sets res.Decision, timing
// the call when an observer is set and the request is among the sampled
// ones (TimingEvery). decide calls lim itself when there is no observer:
// a decision then costs what it did before latency was reported.
func (p *Pipeline[R]) allow(ctx context.Context, lim core.Limiter, res *Result) error {
	var err error
	if p.c.Observer == nil || rand.Uint32()&p.timing != 0 {
		res.Decision, err = lim.Allow(ctx, res.Key, res.Cost)
		return err
	}
	// Two monotonic readings: time.Now would read the wall clock too.
	start := time.Since(epoch)
	res.Decision, err = lim.Allow(ctx, res.Key, res.Cost)
	res.Latency = max(time.Since(epoch)-start, 1) // 0 means "not timed"
	return err
}

// epoch is the instant latencies are read from.
var epoch = time.Now()
