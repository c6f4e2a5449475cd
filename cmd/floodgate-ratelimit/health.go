package main

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// healthNames are the service names the gRPC health service answers for:
// "" (the server), the rate-limit service's full name, and "ratelimit",
// the one name upstream registers.
var healthNames = []string{"", rlsv3.RateLimitService_ServiceDesc.ServiceName, "ratelimit"}

// The components of health, as upstream's: the service is healthy when
// every tracked one is.
const (
	configComponent    = "config"           // a configuration is loaded
	redisComponent     = "redis"            // the main Redis answers
	perSecondComponent = "redis_per_second" // the per-second Redis answers
)

// healthState is the service's health: the gRPC health service's
// statuses and /healthcheck's, from the components it tracks. It is safe
// for concurrent use.
type healthState struct {
	hs    *health.Server
	mu    sync.Mutex
	parts map[string]bool // tracked component → healthy
	down  bool            // shut down: NOT_SERVING for good
	ok    atomic.Bool
}

// newHealth tracks components, each unhealthy until set says otherwise.
func newHealth(components ...string) *healthState {
	h := &healthState{hs: health.NewServer(), parts: map[string]bool{}}
	for _, c := range components {
		h.parts[c] = false
	}
	h.publish()
	return h
}

// set records whether component is healthy; an untracked one is ignored.
func (h *healthState) set(component string, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, tracked := h.parts[component]; !tracked {
		return
	}
	h.parts[component] = ok
	h.publish()
}

// publish sets every name's status from the components; h.mu is held
// (or h is not yet shared).
func (h *healthState) publish() {
	ok := !h.down
	for _, v := range h.parts {
		ok = ok && v
	}
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if ok {
		st = healthpb.HealthCheckResponse_SERVING
	}
	for _, n := range healthNames {
		h.hs.SetServingStatus(n, st)
	}
	h.ok.Store(ok)
}

// shutdown makes every name NOT_SERVING for good: SIGTERM came.
func (h *healthState) shutdown() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.down = true
	h.hs.Shutdown()
	h.ok.Store(false)
}

// ServeHTTP answers /healthcheck as upstream's: 200 "OK" when healthy,
// else 500.
func (h *healthState) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	if !h.ok.Load() {
		http.Error(w, "NOT_SERVING", http.StatusInternalServerError)
		return
	}
	_, _ = io.WriteString(w, "OK")
}
