package grpcclient

import (
	"strconv"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// FuzzRetryHint feeds the client's parser of a refusal arbitrary RetryInfo
// delays and grpc-retry-pushback-ms trailers, as a misbehaving or hostile
// server could send. It must never panic, never return a negative wait, and
// agree with the rules: RetryInfo first when valid, else a pushback that is a
// non-negative decimal count of milliseconds.
func FuzzRetryHint(f *testing.F) {
	f.Add(int64(1), int32(0), true, "")
	f.Add(int64(0), int32(500_000_000), true, "250")
	f.Add(int64(-1), int32(0), true, "100")
	f.Add(int64(0), int32(-5), false, "-1")
	f.Add(int64(315_576_000_001), int32(0), true, "9223372036854775807")
	f.Add(int64(0), int32(0), false, "1e3")
	f.Add(int64(0), int32(0), false, " 10")
	f.Fuzz(func(t *testing.T, secs int64, nanos int32, withInfo bool, pushback string) {
		st := status.New(codes.ResourceExhausted, "rate limit exceeded")
		info := &durationpb.Duration{Seconds: secs, Nanos: nanos}
		if withInfo {
			var err error
			if st, err = st.WithDetails(&errdetails.RetryInfo{RetryDelay: info}); err != nil {
				t.Skip()
			}
		}
		trailer := metadata.Pairs(pushbackKey, pushback)
		d, ok := retryHint(st.Err(), trailer)
		if ok && d < 0 {
			t.Fatalf("negative wait %v", d)
		}
		if withInfo && info.CheckValid() == nil && info.AsDuration() >= 0 {
			if !ok || d != info.AsDuration() {
				t.Fatalf("valid RetryInfo %v gave %v, %v", info.AsDuration(), d, ok)
			}
			return
		}
		ms, err := strconv.ParseInt(pushback, 10, 64)
		want := err == nil && ms >= 0 && ms <= int64(time.Duration(1<<63-1)/time.Millisecond)
		if ok != want || ok && d != time.Duration(ms)*time.Millisecond {
			t.Fatalf("pushback %q gave %v, %v", pushback, d, ok)
		}
		// Other codes are never retried, whatever they carry.
		if _, ok := retryHint(status.Error(codes.Unavailable, "x"), trailer); ok {
			t.Fatal("Unavailable was given a retry delay")
		}
	})
}
