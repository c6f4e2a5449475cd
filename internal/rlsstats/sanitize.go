package rlsstats

import (
	"crypto/sha256"
	"encoding/hex"
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

// maxKey is the longest stats key kept as it is. A rule with
// detailed_metric puts the request's values in its key, and a client
// chooses those: a longer key keeps its first maxKey bytes and a digest of
// the whole, so that a metric's name stays short and two keys still
// differ.
const maxKey = 256

// sanitize makes a stats key a statsd name as upstream does: ":" and "|"
// (statsd's separators) become "_", and so do an IPv4 address's dots. A
// key longer than maxKey is cut there, with "#" and 64 bits of its
// SHA-256 in hex after it.
func sanitize(key string) string {
	if len(key) > maxKey {
		sum := sha256.Sum256([]byte(key))
		key = key[:maxKey] + "#" + hex.EncodeToString(sum[:8])
	}
	key = strings.NewReplacer(":", "_", "|", "_").Replace(key)
	if strings.Count(key, ".") >= 3 {
		key = ipv4.ReplaceAllStringFunc(key, func(ip string) string { return strings.ReplaceAll(ip, ".", "_") })
	}
	return key
}
