// Package graceful is what the example servers share: serving until a stop
// signal and then shutting down gracefully, bounded in time.
package graceful
