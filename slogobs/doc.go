// Package slogobs logs what the floodgate adapters report (a
// [core.Observer]) through log/slog: refusals, shadow mode's would-be
// refusals, bad keys and costs, errors and store failures, sampled so
// that an attack costs a few lines a second rather than a line a request.
//
//	obs, err := slogobs.New(slog.Default())
//	if err != nil {
//		log.Fatal(err)
//	}
//	mw, err := httpmw.New(lim, keyfunc.MustClientIP(), httpmw.WithObserver(obs))
//
// To count as well as log, give the adapter both, joined:
// core.JoinObservers(metrics, logs).
//
// # What is logged
//
// One line a request, with message "rate limit: ...", at these levels:
//
//   - denied: Info, "refused"; in shadow mode "would refuse (shadow mode,
//     admitted)" with shadow=true;
//   - bad_key, bad_cost: Info (the client's fault);
//   - error: Error (a key or cost function failed, or the limiter failed
//     in a way it does not classify);
//   - store_error: Error under fail-closed (the request was refused), Warn
//     under fail-open (admitted);
//   - canceled: Debug (a shaped request's client gave up while waiting);
//   - allowed, shaped: [LevelAllowed], below Debug, so that a handler
//     at Debug does not log every admission; lower the handler's level
//     to LevelAllowed to see them.
//
// Attributes, when they apply: outcome, transport, limit (the limit's
// name), key (redacted, below), cost, retry_after (refusals), delay
// (shaped), held (how long a refusal was held), overflow=true (decided by
// the shared overflow state), leased=true (decided from a local quota
// lease), shadow=true, failure and admitted (store
// failures), error (its text may hold internal details such as a Redis
// address), suppressed (below). The line goes through
// [slog.Logger.LogAttrs] with the request's context, so a handler can add
// trace IDs from it; nothing is built when the logger is not enabled at
// the line's level.
//
// # Sampling
//
// Each kind of line (each outcome, shadow mode's apart) gets at most
// [DefaultMaxPerSecond] (10) lines in a second of the clock
// ([WithMaxPerSecond]; 0 writes every line). The lines beyond are counted
// and dropped, and the next line of that kind written, in a later
// second, carries suppressed=N: how many were dropped since the last
// one. Until such a line is written the count is kept, not lost.
//
// # Keys
//
// A key is an IP address, an API key or a user ID: personal data, maybe a
// secret. By default a line shows key=h:<16 hex digits>, an HMAC-SHA256 of
// the key under a salt drawn at [New]: one key gives one token for the
// life of the Observer, so a client's lines can be followed, but the key
// cannot be read back, and tokens differ between processes and restarts.
// Where an error's text quotes the key, the token replaces it there too.
// [WithKeyRedaction] supplies another function (a lookup to a tenant name,
// a shorter prefix, or the key itself to show keys as they are).
package slogobs
