// Package overload is for protecting a service from itself: where a rate
// limit (core) keeps each client to its quota, overload protection keeps
// the whole service within its capacity, however many clients there are.
//
// It holds, so far, a request's [Priority]: what to shed first under
// overload, the lowest first. [NewContext] puts it in the request's
// context and [PriorityOf] reads it.
package overload
