// Package rls answers Envoy's rate-limit service,
// envoy.service.ratelimit.v3.RateLimitService, on floodgate's engine: the
// same core and redisstore limiters the middleware uses, behind a thin
// adapter like httpmw and grpcmw. cmd/floodgate-ratelimit serves it.
//
// A request names a domain and a list of descriptors. [Rules] finds the
// rule each descriptor falls under (the configuration, see
// internal/rlsconfig) and the key its state lives at; a rule holds one or
// more core.Limit values, all of which apply.
//
// # All or nothing
//
// By default (Config.Charging ChargeAllOrNothing) the descriptors of one
// request are decided together: the request is
// admitted only if every enforced descriptor admits it, and then each is
// charged its cost; if any refuses, none is charged (the admissions made
// while deciding are refunded before the answer). Between a charge and its
// refund another request may see the key's quota short by that charge and
// be refused: the service may under-admit for that instant, never admit
// more than a limit allows. With Config.Multi (redisstore.Multi on Redis)
// the enforced descriptors are decided in one call, one round trip, and a
// refused request charges nothing at all (on a Redis Cluster, keys of
// other hash slots are refunded as above). A refused descriptor reports
// what is left.
//
// envoyproxy/ratelimit decides each descriptor on its own, so a request
// refused by one is still charged by the others, and the one that refuses
// is charged past its limit: ChargeAlways gives that, and
// ChargeStopWhenOver its STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT (see
// Charging). Under both, a rule of one fixed window (what upstream
// counts) has a counter that goes one past its limit, no further: a
// descriptor over the limit takes it there, spending what was left, and
// reports 0 left, as upstream's.
//
// A rule in shadow mode is decided and charged as if enforced, but, all or
// nothing, only once the enforced descriptors admitted the request (so
// that it counts what enforcing it would have counted); its refusals never
// refuse the request. An unlimited rule is never charged; a rule named in another
// matching rule's replaces list is skipped for that request. A rule whose
// quota is 0 refuses every request: all or nothing, one it names (outside
// quota mode) is refused as it stands, with no store asked and its other
// descriptors neither charged nor counted, so a refused client costs
// nothing. With
// Config.Multi, a request's shadow descriptors are decided in one more
// call and the hits it gives back in another. Rules in quota mode
// (envoyproxy/ratelimit's quota_mode, or all of them under Config.Quota)
// refuse a request only when all of them refuse it; one that refused an
// admitted request is not charged. Under global shadow mode
// (Config.Shadow) each descriptor's status is what enforcing would answer
// and the overall code is OK.
//
// # Local cache
//
// With Config.LocalCacheBytes (envoyproxy/ratelimit's
// LOCAL_CACHE_SIZE_IN_BYTES), the service remembers the keys a limiter
// refused a request of cost 1, each until that refusal's RetryAfter ends
// (a fixed window's end), counted from before the store was asked, so
// that an entry never outlives the store's own answer. Until then a
// descriptor naming such a key under the same limits is refused with no
// store asked: OVER_LIMIT, nothing left, the reset and Retry-After that
// remain, counted in Counts.OverLimitWithLocalCache. All or nothing, a
// request an enforced descriptor so refuses is refused as it stands, as
// one a rule refusing everything names: nothing is charged, and its other
// descriptors are neither decided nor counted. A descriptor in quota mode
// so refused refuses the request only when all of them do (the others
// are then decided without it), and a shadow one is answered OK; under
// upstream's charging, the others are decided as ever. Units given back
// (is_negative_hits, the checks, the charges of a refused request
// undone) end their keys' entries; units another instance gives back do
// not, and that instance's clients are refused until the entry ends.
//
// # Cost
//
// A descriptor costs its hits_addend when set, else the request's
// hits_addend, else 1. A descriptor whose hits_addend is set to 0 is a
// check: it is decided at a cost of 1, which is given back at once, so
// that it reports what is left and the reset and is never charged; it is
// over the limit (and refuses the request like any descriptor) once
// nothing is left. envoyproxy/ratelimit's check is over the limit once its
// count is past the limit; the two differ only for a count exactly at the
// limit (upstream: OK, 0 left), which floodgate's counters, stopping at
// the limit, cannot tell from one past it. Under upstream's charging
// (ChargeAlways, ChargeStopWhenOver) a rule of one fixed window counts one
// past its limit, and its checks are answered as upstream's.
// is_negative_hits gives the cost back (core.Limiter.Refund) instead of
// charging it. A cost above what the limit can ever admit is refused
// (OVER_LIMIT) without a charge.
//
// # Answers
//
// A status's duration_until_reset is whole seconds, rounded up, as
// upstream's. The header fields are Config.Headers' (none at all under
// core.HeadersNone) and, when Config.UpstreamHeaders is set,
// envoyproxy/ratelimit's three. Config.DynamicMetadata adds upstream's
// dynamic_metadata; Config.Stats hears upstream's per-rule counters.
//
// # Failures
//
// A store error follows the failure mode: core.FailOpen answers the
// descriptor OK, core.FailClosed (the default, as in the middleware)
// OVER_LIMIT, with Retry-After: 1 when nothing else refused the request.
// Either way the observer hears of it. Config.FailCall fails the call
// instead, as envoyproxy/ratelimit does. When a Multi's call
// fails on keys of several servers, some of which may answer (a Redis
// Cluster with a master down, ErrPartial), a request failing open is
// decided again one limiter at a time, so that the descriptors whose
// servers answer are still counted.
package rls
