// Package overload is for protecting a service from itself: where a rate
// limit (core) keeps each client to its quota, overload protection keeps
// the whole service within its capacity, however many clients there are.
//
// It holds, so far, a request's [Priority]: what to shed first under
// overload, the lowest first. [NewContext] puts it in the request's
// context and [PriorityOf] reads it.
//
// On the client side, a [Throttle] (Google SRE's adaptive throttling)
// rejects some of a client's requests before they are sent once its
// backend refuses too many, so that a fleet of clients stops hammering a
// backend that is shedding load; httpclient and grpcclient take one
// (WithThrottle). A request it rejects is not sent and fails with an
// error matching [ErrThrottled].
package overload
