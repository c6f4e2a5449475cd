package overload

import "github.com/floodgate/floodgate/internal/tally"

// throttleSums returns, for the window whose newest bucket is n, the sum of
// sent and of accepted over it, and how many of the requests sent in its
// newest two buckets are not answered yet (neither accepted nor refused).
// It finds n's slot once (a division costs more than all the loads).
func throttleSums(sent, accepted, refused *tally.Window, n int64) (s, a, young uint64) {
	i := tally.Slot(n)
	for j := range int64(tally.Buckets) {
		sj, aj := sent.CountAt(i, n-j), accepted.CountAt(i, n-j)
		s += sj
		a += aj
		if j < 2 {
			if answered := aj + refused.CountAt(i, n-j); sj > answered {
				young += sj - answered
			}
		}
		if i--; i < 0 {
			i = tally.Buckets - 1
		}
	}
	return s, a, young
}
