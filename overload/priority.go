package overload

import "context"

// Priority is how much a request matters when the service must shed
// some: under overload the lowest priority is shed first, and a higher one
// only once no lower one is left to shed. Any value may be used; the
// named ones are the usual classes. The zero Priority is Normal, so a
// request with none set is Normal.
type Priority int8

const (
	// Sheddable is for work that may be dropped first: prefetches, batch
	// jobs, retries of retries.
	Sheddable Priority = -1
	// Normal is the default.
	Normal Priority = 0
	// Critical is for what must be served while anything is: logins,
	// payments, health checks.
	Critical Priority = 1
)

// priorityKey keys a request's Priority in its context.
type priorityKey struct{}

// NewContext returns ctx carrying the request's priority p, for the
// limiters of this package to read (PriorityOf).
func NewContext(ctx context.Context, p Priority) context.Context {
	return context.WithValue(ctx, priorityKey{}, p)
}

// PriorityOf returns the priority ctx carries (NewContext), or Normal.
func PriorityOf(ctx context.Context) Priority {
	p, _ := ctx.Value(priorityKey{}).(Priority)
	return p
}
