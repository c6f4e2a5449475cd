package option

import (
	"errors"
	"fmt"
)

// Errors collects the errors of invalid options. The zero value is ready
// to use with an empty prefix; adapters set Prefix to "httpmw: " and so on.
type Errors struct {
	Prefix string
	list   []error
}

// Require records the error format describes unless ok, and returns ok, so
// an option reads:
//
//	if o.errs.Require(f != nil, "WithCost(nil); leave the option out for a cost of 1") {
//		o.cost = f
//	}
func (e *Errors) Require(ok bool, format string, args ...any) bool {
	if !ok {
		e.list = append(e.list, fmt.Errorf(e.Prefix+format, args...))
	}
	return ok
}

// Err returns every recorded error joined, or nil.
func (e *Errors) Err() error { return errors.Join(e.list...) }

// Apply runs opts on o and returns the errors they recorded in errs, or an
// error naming the first nil option.
func Apply[O any, F ~func(*O)](o *O, errs *Errors, opts []F) error {
	for i, opt := range opts {
		if opt == nil {
			return fmt.Errorf("%snil Option (argument %d); leave it out instead", errs.Prefix, i+1)
		}
		opt(o)
	}
	return errs.Err()
}
