package main

import (
	"crypto/tls"
	"math"
	"strings"
	"time"
)

// redisEnv is one Redis's variables: the main one's or the per-second
// one's (names with REDIS_PERSECOND_).
type redisEnv struct {
	socketType, kind, url                          opt[string]
	poolSize, pipelineLimit, parallelism           opt[int]
	auth, sentinelAuth, onEmpty                    opt[string]
	tls                                            opt[bool]
	pipelineWindow, timeout                        opt[time.Duration]
	socketName, kindName, urlName, authName, sAuth string
}

// readRedis reads the variables of one Redis, their names starting with
// prefix ("REDIS_" or "REDIS_PERSECOND_").
func readRedis(e *env, prefix string) redisEnv {
	r := redisEnv{socketName: prefix + "SOCKET_TYPE", kindName: prefix + "TYPE", urlName: prefix + "URL", authName: prefix + "AUTH", sAuth: prefix + "SENTINEL_AUTH"}
	r.socketType = e.oneOf(r.socketName, "tcp", "unix")
	r.kind = e.oneOf(r.kindName, "SINGLE", "SENTINEL", "CLUSTER")
	r.url = e.str(r.urlName)
	r.poolSize = e.integer(prefix+"POOL_SIZE", 1, math.MaxInt32)
	r.auth = e.str(r.authName)
	r.sentinelAuth = e.str(r.sAuth)
	r.tls = e.boolean(prefix + "TLS")
	r.pipelineWindow = e.duration(prefix+"PIPELINE_WINDOW", 0)
	r.pipelineLimit = e.integer(prefix+"PIPELINE_LIMIT", 0, math.MaxInt32)
	r.parallelism = e.integer(prefix+"CLUSTER_PIPELINE_PARALLELISM", 0, math.MaxInt32)
	r.timeout = e.duration(prefix+"TIMEOUT", 0)
	r.onEmpty = e.oneOf(prefix+"POOL_ON_EMPTY_BEHAVIOR", "WAIT", "CREATE", "ERROR")
	switch r.onEmpty.v {
	case "create", "error":
		e.refuse(prefix+"POOL_ON_EMPTY_BEHAVIOR", "a call waits for a free connection when the pool is full, as upstream's WAIT (upstream refuses CREATE and ERROR too); set WAIT, and raise %sPOOL_SIZE if calls wait", prefix)
	}
	return r
}

// anySet reports whether any of r's variables is set, and names one.
func (r redisEnv) anySet(prefix string) (string, bool) {
	for _, v := range []struct {
		name string
		set  bool
	}{
		{r.socketName, r.socketType.set}, {r.kindName, r.kind.set}, {prefix + "POOL_SIZE", r.poolSize.set},
		{r.authName, r.auth.set}, {r.sAuth, r.sentinelAuth.set}, {prefix + "TLS", r.tls.set},
		{prefix + "PIPELINE_WINDOW", r.pipelineWindow.set}, {prefix + "PIPELINE_LIMIT", r.pipelineLimit.set},
		{prefix + "CLUSTER_PIPELINE_PARALLELISM", r.parallelism.set}, {prefix + "TIMEOUT", r.timeout.set},
		{prefix + "POOL_ON_EMPTY_BEHAVIOR", r.onEmpty.set},
	} {
		if v.set {
			return v.name, true
		}
	}
	return "", false
}

// redisSettings reads the Redis variables into s.redis and s.perSecond.
// Where Redis is comes from -redis, else REDIS_ADDR (floodgate's own),
// else REDIS_URL; how to reach it (auth, TLS, pool, timeouts) from
// upstream's variables whichever gave the address.
func (s *settings) redisSettings(e *env, set map[string]bool) {
	primary := readRedis(e, "REDIS_")
	ps := readRedis(e, "REDIS_PERSECOND_")
	perSecond := e.boolean("REDIS_PERSECOND")
	tlsFiles := struct{ cert, key, ca opt[string] }{e.str("REDIS_TLS_CLIENT_CERT"), e.str("REDIS_TLS_CLIENT_KEY"), e.str("REDIS_TLS_CACERT")}
	skipVerify := e.boolean("REDIS_TLS_SKIP_HOSTNAME_VERIFICATION")
	s.redisHealthActive = e.boolean("REDIS_HEALTH_CHECK_ACTIVE_CONNECTION").v
	initial := e.duration("REDIS_STARTUP_INITIAL_INTERVAL", time.Millisecond)
	most := e.duration("REDIS_STARTUP_MAX_INTERVAL", time.Millisecond)
	elapsed := e.duration("REDIS_STARTUP_MAX_ELAPSED_TIME", 0)
	startup := [3]bool{initial.set, most.set, elapsed.set}
	s.startup = backoff{initial: durationOr(initial, time.Second), max: durationOr(most, 30*time.Second), maxElapsed: elapsed.v}
	if s.startup.max < s.startup.initial {
		e.refuse("REDIS_STARTUP_MAX_INTERVAL", "shorter than REDIS_STARTUP_INITIAL_INTERVAL (%v); make it at least as long", s.startup.initial)
	}
	prefix := e.str("CACHE_KEY_PREFIX")
	jitter := e.integer("EXPIRATION_JITTER_MAX_SECONDS", math.MinInt32, math.MaxInt32)
	cache := e.integer("LOCAL_CACHE_SIZE_IN_BYTES", 0, math.MaxInt32)
	backend := e.oneOf("BACKEND_TYPE", "redis", "memcache")
	if backend.v == "memcache" {
		e.refuse("BACKEND_TYPE", "floodgate has no memcache backend; use Redis (BACKEND_TYPE=redis with REDIS_URL), or leave REDIS_URL unset for the in-memory store")
	}
	if prefix.set {
		if strings.ContainsAny(prefix.v, "{}") {
			e.refuse("CACHE_KEY_PREFIX", "floodgate puts each key's name in braces (its Redis Cluster hash tag), and braces in the prefix would move keys out of it; use a prefix without { or }")
		}
		s.store.prefix = prefix
	}
	if jitter.set {
		if jitter.v < 0 || jitter.v > maxJitterSeconds {
			e.refuse("EXPIRATION_JITTER_MAX_SECONDS", "use a whole number of seconds from 0 (no jitter) to %d (a day: a longer jitter spreads expiries no better and keeps every key longer)", maxJitterSeconds)
		} else {
			s.store.jitter = opt[time.Duration]{time.Duration(jitter.v) * time.Second, true}
		}
	}
	if cache.set {
		// The service's cache of refused keys, in front of the Multi and
		// the limiters alike, is the only one: the limiters' own is off.
		s.store.localCache = cache.v
		s.store.denyCache = opt[int]{0, true}
	}

	var tlsConf *tls.Config
	if primary.tls.v || perSecond.v && ps.tls.v {
		if tlsFiles.cert.set != tlsFiles.key.set {
			e.refuse("REDIS_TLS_CLIENT_CERT", "REDIS_TLS_CLIENT_CERT and REDIS_TLS_CLIENT_KEY go together: set both (the client's certificate and key) or neither")
		} else if c, err := redisTLS(tlsFiles.cert.v, tlsFiles.key.v, tlsFiles.ca.v, skipVerify.v); err != nil {
			e.errs = append(e.errs, err)
		} else {
			tlsConf = c
		}
	}

	// Where: -redis, REDIS_ADDR, then REDIS_URL.
	switch {
	case set["redis"] || s.fromEnv["REDIS_ADDR"]:
		by := "-redis"
		if !set["redis"] {
			by = "REDIS_ADDR"
		}
		if primary.url.set {
			s.note("%s overrides REDIS_URL", by)
		}
		if s.redisAddrs != "" {
			t := &redisTarget{addrs: strings.Split(s.redisAddrs, ","), master: s.redisMaster, network: "tcp", source: by}
			switch {
			case t.master != "":
				t.kind = "sentinel"
			case len(t.addrs) > 1:
				t.kind = "cluster"
			default:
				t.kind = "single"
			}
			s.redis = t
		}
	case primary.url.set:
		s.redis = primary.target(e, "REDIS_")
	case perSecond.v:
		e.refuse("REDIS_PERSECOND", "per-second limits go to a second Redis, and the others to the main one, which REDIS_URL names: set REDIS_URL")
	default:
		if name, ok := primary.anySet("REDIS_"); ok {
			e.refuse(name, "configures Redis, but REDIS_URL is not set, and floodgate then keeps limits in memory (upstream would use its default, the Unix socket /var/run/nutcracker/ratelimit.sock): set REDIS_URL, or remove %s", name)
		}
		for _, v := range []struct {
			name string
			set  bool
		}{
			{"CACHE_KEY_PREFIX", prefix.set}, {"LOCAL_CACHE_SIZE_IN_BYTES", cache.set}, {"BACKEND_TYPE", backend.v == "redis"},
			{"EXPIRATION_JITTER_MAX_SECONDS", jitter.v != 0},
			{"REDIS_HEALTH_CHECK_ACTIVE_CONNECTION", s.redisHealthActive}, {"REDIS_STARTUP_INITIAL_INTERVAL", startup[0]},
			{"REDIS_STARTUP_MAX_INTERVAL", startup[1]}, {"REDIS_STARTUP_MAX_ELAPSED_TIME", startup[2]},
		} {
			if v.set {
				e.refuse(v.name, "configures Redis, but REDIS_URL is not set, and floodgate then keeps limits in memory: set REDIS_URL, or remove %s", v.name)
			}
		}
	}
	if s.redis == nil {
		return
	}
	s.redis.apply(e, primary, "REDIS_", tlsConf, s.redisPass)
	if perSecond.v {
		if !ps.url.set {
			e.refuse("REDIS_PERSECOND", "needs REDIS_PERSECOND_URL, the Redis that holds the per-second limits")
			return
		}
		s.perSecond = ps.target(e, "REDIS_PERSECOND_")
		if s.perSecond != nil {
			s.perSecond.apply(e, ps, "REDIS_PERSECOND_", tlsConf, "")
		}
	}
}

// target returns the Redis r's URL and types name, nil if they are
// refused. Upstream's URL is one address for SINGLE ("host:port", or a
// socket path when the socket type is unix, its default), "master name,
// sentinel1,sentinel2,..." for SENTINEL, and "node1,node2,..." for
// CLUSTER; an address may also be a redis:// URL with credentials.
func (r redisEnv) target(e *env, prefix string) *redisTarget {
	t := &redisTarget{kind: or(r.kind.v, "single"), network: "tcp", source: r.urlName}
	parts := strings.Split(r.url.v, ",")
	switch t.kind {
	case "single":
		if len(parts) > 1 {
			e.refuse(r.urlName, "a SINGLE Redis has one address; for several set %s to CLUSTER or SENTINEL", r.kindName)
			return nil
		}
		t.network = or(r.socketType.v, "unix")
		if t.network == "unix" && !r.socketType.set && !strings.Contains(parts[0], "/") {
			e.refuse(r.urlName, "is read as a Unix socket's path, since %s defaults to unix as upstream's does: set %s=tcp for a host:port", r.socketName, r.socketName)
			return nil
		}
	case "sentinel":
		if len(parts) < 2 {
			e.refuse(r.urlName, "with %s=SENTINEL, it is: master name,sentinel1 host:port,...,sentinelN host:port", r.kindName)
			return nil
		}
		t.master, parts = parts[0], parts[1:]
	}
	for _, p := range parts {
		addr, user, pass, db, tlsURL, err := parseAddr(p, t.network == "unix")
		if err != nil {
			e.refuse(r.urlName, "%v", err)
			return nil
		}
		if user != "" || pass != "" {
			if t.urlAuth != "" && t.urlAuth != user+":"+pass {
				e.refuse(r.urlName, "its addresses carry different credentials; give them once in %s", r.authName)
				return nil
			}
			t.user, t.password, t.urlAuth = user, pass, user+":"+pass
		}
		if db != 0 {
			if t.kind == "cluster" {
				e.refuse(r.urlName, "a Redis Cluster has database 0 only; remove /%d", db)
				return nil
			}
			t.db = db
		}
		t.urlTLS = t.urlTLS || tlsURL
		t.addrs = append(t.addrs, addr)
	}
	return t
}
