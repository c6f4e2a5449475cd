// Package option is the option validation every adapter shares: options
// record what is wrong with their arguments, and the constructor reports
// all of it at once, each message starting with the package's name and
// saying what to do instead. [Adapter] is the configuration the
// middlewares share, so that their options of the same name mean the same.
package option
