package redistest

import "github.com/floodgate/floodgate/internal/redisproc"

// The tests talk to their servers through redisproc's RESP client.

type respError = redisproc.ReplyError

func command(addr, password string, args ...string) (any, error) {
	return redisproc.Command(addr, password, args...)
}
