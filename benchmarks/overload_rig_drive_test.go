package benchmarks

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// outcome is how a call of the generator ended.
type outcome int

const (
	answered outcome = iota // served whole
	shedOut                 // refused by the server's protection
	timedOut                // past the client's deadline
	failed                  // anything else
)

// caller makes one call to the server under test.
type caller func(ctx context.Context) outcome

// newCaller returns a caller of transport at addr and what closes it.
func newCaller(transport, addr string) (caller, func()) {
	if transport == rigHTTP {
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4096}}
		url := "http://" + addr + "/"
		return func(ctx context.Context) outcome {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return failed
			}
			resp, err := client.Do(req)
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					return timedOut
				}
				return failed
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusOK:
				return answered
			case http.StatusServiceUnavailable, http.StatusTooManyRequests:
				// 503: a guard's shed; 429: a limit's refusal (floodgate's
				// static concurrency limit through httpmw).
				return shedOut
			}
			return failed
		}, client.CloseIdleConnections
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	in := new(emptypb.Empty)
	if transport == rigGRPCUnary {
		return func(ctx context.Context) outcome {
			return grpcOutcome(conn.Invoke(ctx, rigUnaryMethod, in, new(emptypb.Empty)))
		}, func() { _ = conn.Close() }
	}
	desc := &grpc.StreamDesc{StreamName: "WorkStream", ServerStreams: true}
	return func(ctx context.Context) outcome {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		s, err := conn.NewStream(ctx, desc, rigStreamMethod)
		if err != nil {
			return grpcOutcome(err)
		}
		if err := s.SendMsg(in); err != nil {
			return grpcOutcome(err)
		}
		if err := s.CloseSend(); err != nil {
			return grpcOutcome(err)
		}
		for n := 0; ; n++ {
			if err := s.RecvMsg(new(emptypb.Empty)); err != nil {
				if err == io.EOF && n == rigParts {
					return answered
				}
				return grpcOutcome(err)
			}
		}
	}, func() { _ = conn.Close() }
}

// grpcOutcome classes a call's error: Unavailable (floodgate's shed) and
// ResourceExhausted (kratos's) are sheds, and so is failsafe-go's
// ErrExceeded, which its interceptor returns as it is (gRPC sends it as
// Unknown with its text).
func grpcOutcome(err error) outcome {
	if err == nil {
		return answered
	}
	s := status.Convert(err)
	switch {
	case s.Code() == codes.Unavailable, s.Code() == codes.ResourceExhausted,
		s.Code() == codes.Unknown && s.Message() == adaptivelimiter.ErrExceeded.Error():
		return shedOut
	case s.Code() == codes.DeadlineExceeded:
		return timedOut
	}
	return failed
}

// rigBucket counts, per 100 ms of a run, the arrivals and the calls that
// ended in it.
type rigBucket struct{ offered, good, shed int }

// rigBucketLen is the capacity-change run's sampling period.
const rigBucketLen = 100 * time.Millisecond

// rigResult is one run: what was offered and what came back, after the
// warm-up quarter, and all of it per 100 ms.
type rigResult struct {
	offered, good, shed, timedOut, other int
	lat                                  []time.Duration // answered requests
	secs                                 float64
	start                                time.Time
	buckets                              []rigBucket
}

func (r *rigResult) p(q float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	slices.Sort(r.lat)
	return r.lat[int(q*float64(len(r.lat)-1))]
}

func (r *rigResult) bucket(at time.Time) *rigBucket {
	i := max(int(at.Sub(r.start)/rigBucketLen), 0)
	if i >= len(r.buckets) {
		r.buckets = append(r.buckets, make([]rigBucket, i+1-len(r.buckets))...)
	}
	return &r.buckets[i]
}

// drive offers rate calls a second for run (Poisson arrivals from seed),
// each with a deadline of 4 × slo, and counts after the first quarter;
// at, when not nil, runs at each arrival's offset from the start (the
// capacity-change run's control).
func drive(call caller, rate float64, run, slo time.Duration, seed uint64, at func(time.Duration)) *rigResult {
	rng := rand.New(rand.NewPCG(seed, 33))
	res := &rigResult{secs: run.Seconds() * 3 / 4, start: time.Now()}
	var mu sync.Mutex
	var wg sync.WaitGroup
	from := res.start.Add(run / 4)
	next := res.start
	for next.Before(res.start.Add(run)) {
		time.Sleep(time.Until(next))
		if at != nil {
			at(next.Sub(res.start))
		}
		counted := next.After(from)
		arrival := next
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 4*slo)
			defer cancel()
			t0 := time.Now()
			o := call(ctx)
			took := time.Since(t0)
			mu.Lock()
			defer mu.Unlock()
			end := res.bucket(t0.Add(took))
			res.bucket(arrival).offered++
			if o == shedOut {
				end.shed++
			}
			if o == answered && took <= slo {
				end.good++
			}
			if !counted {
				return
			}
			res.offered++
			switch o {
			case answered:
				res.lat = append(res.lat, took)
				if took <= slo {
					res.good++
				}
			case shedOut:
				res.shed++
			case timedOut:
				res.timedOut++
			default:
				res.other++
			}
		})
		next = next.Add(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
	}
	wg.Wait()
	return res
}

// capacity measures the server's throughput with no guard, closed loop,
// 4 callers for d.
func capacity(call caller, d time.Duration) float64 {
	var n atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if call(ctx) == answered {
					n.Add(1)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	return float64(n.Load()) / d.Seconds()
}
