package rlsstats

import (
	"regexp"
	"strings"
)

// ipv4 finds IPv4 addresses, whose dots upstream turns into underscores in
// a stats name, so that an address stays one part of it.
var ipv4 = regexp.MustCompile(`\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}`)

// Labels splits a rule's stats key as upstream's Prometheus mapping does:
// the domain, key1 and key2 (":" and "|" read as "_", and an IPv4
// address's dots as "_"; key2 is empty for a key of one part).
func Labels(key string) [3]string {
	var l [3]string
	copy(l[:], strings.SplitN(sanitize(key), ".", 4))
	return l
}
