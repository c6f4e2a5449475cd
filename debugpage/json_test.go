package debugpage_test

import "time"

// snapshot is the page's JSON (?format=json) as a client reads it: the
// tests decode into these types, written apart from the package's own, so
// that a renamed or dropped field fails them.
type snapshot struct {
	Time         time.Time         `json:"time"`
	Since        time.Time         `json:"since"`
	Totals       map[string]uint64 `json:"totals"`
	ShadowDenied uint64            `json:"shadow_denied"`
	Overflow     uint64            `json:"overflow"`
	Window       struct {
		Start     int64               `json:"start"`
		Seconds   int                 `json:"seconds"`
		Counts    map[string][]uint64 `json:"counts"`
		Totals    map[string]uint64   `json:"totals"`
		PerSecond map[string]float64  `json:"per_second"`
	} `json:"window"`
	KeyForm     string    `json:"key_form"`
	HotKeys     topKeys   `json:"hot_keys"`
	RefusedKeys topKeys   `json:"refused_keys"`
	Policies    []limiter `json:"policies"`
	Health      []health  `json:"health"`
	Guards      []guard   `json:"guards"`
	// ShedByPriority is read as JSON objects, so that a field added,
	// renamed or dropped shows in the tests' expected text.
	ShedByPriority []map[string]any `json:"shed_by_priority"`
}

type guard struct {
	Name      string  `json:"name"`
	Limit     int     `json:"limit"`
	InFlight  int     `json:"in_flight"`
	LatencyMs float64 `json:"latency_ms"`
}

type topKeys struct {
	Keys []struct {
		Key   string `json:"key"`
		Count uint64 `json:"count"`
		Error uint64 `json:"error"`
	} `json:"keys"`
	Unmonitored uint64 `json:"unmonitored"`
	Monitored   int    `json:"monitored"`
}

type limiter struct {
	Limiter string `json:"limiter"`
	Limits  []struct {
		Name   string `json:"name"`
		Events int    `json:"events"`
		Period string `json:"period"`
		Burst  int    `json:"burst"`
	} `json:"limits"`
}

type health struct {
	Name  string `json:"name"`
	State string `json:"state"`
	Stats *stats `json:"stats"`
}

type stats struct {
	PrimaryDecisions uint64 `json:"primary_decisions"`
	LocalDecisions   uint64 `json:"local_decisions"`
	PrimaryFailures  uint64 `json:"primary_failures"`
	Opens            uint64 `json:"opens"`
	LeaseDecisions   uint64 `json:"lease_decisions"`
	Leases           uint64 `json:"leases"`
	Returned         uint64 `json:"returned_units"`
	Returns          uint64 `json:"returns"`
}
