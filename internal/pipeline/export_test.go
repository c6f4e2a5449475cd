package pipeline

import (
	"context"
	"time"
)

// SetSleep replaces p's waits (shaping and holds) with f.
func SetSleep[R any](p *Pipeline[R], f func(context.Context, time.Duration) error) { p.sleep = f }

// TimeEvery makes p time every observed request (see TimingEvery).
func TimeEvery[R any](p *Pipeline[R]) { p.timing = 0 }
