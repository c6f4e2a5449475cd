package coretest

import (
	"testing"
	"time"
)

// Outage is the scenario of a client-side throttle's recovery goal (issue
// 33): a client calling every 20 ms of clock for 10 s to a healthy
// backend, then 30 s during which the backend sheds every call, then two
// throttle windows (Window) healthy again. The client packages run it
// through a real server with their own transports.
type Outage struct {
	// Clock is the throttle's clock; Start is where the scenario starts.
	Clock *Clock
	Start time.Time
	// Window is the throttle's window: the goal is to be back within one.
	Window time.Duration
	// Probability reads the throttle's rejection probability now.
	Probability func() float64
	// Shed starts (true) or stops the backend's shedding.
	Shed func(bool)
	// Served counts the calls the backend has received so far.
	Served func() int64
	// Call makes one call; an error that is not a throttle's rejection
	// or the backend's shed fails the test.
	Call func() error
}

// Run drives the scenario and checks its goals: the client is back to
// at least 90 % of its throughput (a rejection probability of at most
// 0.1, from then on) within one window of the backend's recovery, and
// the backend sees at most a tenth of the calls in the outage's second
// half (the accepts of before it having left the window by then).
func (o Outage) Run(t testing.TB) {
	t.Helper()
	const (
		step            = 20 * time.Millisecond
		healthy, outage = 10 * time.Second, 30 * time.Second
	)
	var lastHigh time.Duration
	var outageGot int64
	for at := time.Duration(0); at < healthy+outage+2*o.Window; at += step {
		o.Clock.Set(o.Start.Add(at))
		switch at {
		case healthy:
			o.Shed(true)
		case healthy + outage/2:
			outageGot = o.Served()
		case healthy + outage:
			o.Shed(false)
			outageGot = o.Served() - outageGot
		}
		if since := at - healthy - outage; since >= 0 && o.Probability() > 0.1 {
			lastHigh = since + step
		}
		if err := o.Call(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("the backend saw %d of %d calls in the outage's second half; back to 90 %% %v after it ended", outageGot, outage/2/step, lastHigh)
	if lastHigh > o.Window {
		t.Errorf("back to 90 %% %v after the outage ended, more than the window %v", lastHigh, o.Window)
	}
	if outageGot > int64(outage/2/step)/10 {
		t.Errorf("the backend saw %d of %d calls in the outage's second half, more than a tenth", outageGot, outage/2/step)
	}
}
