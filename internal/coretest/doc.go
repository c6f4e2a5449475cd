// Package coretest holds helpers for testing code that uses floodgate: a
// fake clock that moves only when told to, so that tests of limits run
// without sleeping and expect exact values, a limiter whose store is
// down ([StoreDown]) for testing failure modes, one whose leases record
// how each request ended ([Endings]), and the client throttle's outage
// scenario the client packages share ([Outage]).
//
//	clock := coretest.NewClock(time.Unix(0, 0))
//	lim, _ := core.New(core.PerSecond(1), core.WithClock(clock))
//	clock.Advance(time.Second) // a second passes at once
package coretest
