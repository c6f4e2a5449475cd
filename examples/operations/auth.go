package main

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// requireToken serves next only to requests that carry token: as a bearer
// token (Authorization: Bearer TOKEN), for scripts and curl, or as the
// password of HTTP Basic authentication (any user name), which a browser
// asks for once and then sends with every request of the page, its
// script's included. Anything else is answered 401 with nothing of next.
func requireToken(token string, next http.Handler) http.Handler {
	// Comparing hashes of equal length keeps the comparison's time from
	// telling how long the token is or how much of it a guess got right.
	want := sha256.Sum256([]byte(token))
	matches := func(got string) bool {
		sum := sha256.Sum256([]byte(got))
		return subtle.ConstantTimeCompare(sum[:], want[:]) == 1
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok := false
		if bearer, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found {
			ok = matches(bearer)
		} else if _, password, found := r.BasicAuth(); found {
			ok = matches(password)
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="floodgate debug page", charset="UTF-8"`)
			w.Header().Add("WWW-Authenticate", `Bearer realm="floodgate debug page"`)
			http.Error(w, "the debug page needs its token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
