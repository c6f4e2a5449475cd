package debugpage

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"sync"
)

var (
	secretOnce sync.Once
	secret     [32]byte
)

// Redact returns the form a key is shown in by default: the first 12 hex
// digits of its HMAC-SHA256 under a secret drawn at random once per
// process. The same key gives the same text in every page of the process,
// so it can be followed over time and matched with logs that call Redact
// too, but not reversed by guessing likely keys (IP addresses are few)
// without the secret, and not matched across processes or restarts.
func Redact(key string) string {
	secretOnce.Do(func() { rand.Read(secret[:]) })
	m := hmac.New(sha256.New, secret[:])
	m.Write([]byte(key))
	return hex.EncodeToString(m.Sum(nil)[:6])
}
