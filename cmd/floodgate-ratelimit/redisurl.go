package main

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// parseAddr reads one address of a Redis URL: host:port, a socket path
// (unix), or redis://[user:password@]host:port[/db] (rediss:// for TLS).
func parseAddr(a string, unix bool) (addr, user, pass string, db int, tlsOn bool, err error) {
	if !strings.HasPrefix(a, "redis://") && !strings.HasPrefix(a, "rediss://") {
		if !unix {
			if _, _, err := net.SplitHostPort(a); err != nil {
				return "", "", "", 0, false, fmt.Errorf("%q is not host:port", a)
			}
		}
		return a, "", "", 0, false, nil
	}
	u, err := url.Parse(a)
	if err != nil || u.Host == "" {
		return "", "", "", 0, false, fmt.Errorf("%q is not a redis://[user:password@]host:port[/db] URL", redactURL(a))
	}
	if p := strings.TrimPrefix(u.Path, "/"); p != "" {
		if db, err = strconv.Atoi(p); err != nil || db < 0 {
			return "", "", "", 0, false, fmt.Errorf("%q: the path is a database number, such as /0", redactURL(a))
		}
	}
	addr = u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "6379")
	}
	if u.User != nil {
		user = u.User.Username()
		pass, _ = u.User.Password()
		if pass == "" {
			user, pass = "", user // redis://secret@host: a password alone
		}
	}
	return addr, user, pass, db, u.Scheme == "rediss", nil
}

// redactURL hides a URL's credentials.
func redactURL(a string) string {
	if i := strings.LastIndex(a, "@"); i >= 0 {
		if j := strings.Index(a, "://"); j >= 0 && j < i {
			return a[:j+3] + "*****" + a[i:]
		}
	}
	return a
}

// apply reads how to reach t from r: credentials (password, if given,
// is floodgate's REDIS_PASSWORD, which wins over REDIS_AUTH), TLS, the
// pool, the timeout and the pipelines.
func (t *redisTarget) apply(e *env, r redisEnv, prefix string, tlsConf *tls.Config, password string) {
	switch {
	case password != "":
		if r.auth.set {
			e.refuse(r.authName, "REDIS_PASSWORD (floodgate's name) is set too: keep one")
		}
		t.user, t.password = "", password
	case r.auth.set:
		if t.urlAuth != "" {
			e.refuse(r.authName, "%s carries credentials too: keep one", r.urlName)
		}
		t.user, t.password = splitAuth(r.auth.v)
	}
	if r.sentinelAuth.set {
		if t.kind != "sentinel" {
			e.refuse(r.sAuth, "authenticates to Sentinels, and %s is not SENTINEL: remove it", r.kindName)
		}
		t.sentinelUser, t.sentinelPassword = splitAuth(r.sentinelAuth.v)
	}
	if r.tls.v || t.urlTLS {
		if tlsConf == nil {
			tlsConf = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		t.tls = tlsConf
	}
	t.poolSize = r.poolSize.v
	t.timeout = r.timeout
	t.batchSize = r.pipelineLimit.v
}

// splitAuth reads upstream's auth, "password" or "user:password".
func splitAuth(a string) (user, pass string) {
	if u, p, ok := strings.Cut(a, ":"); ok {
		return u, p
	}
	return "", a
}
