package httpclient_test

import (
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/floodgate/floodgate/httpclient"
)

// t0 is where every fake clock starts: a whole hour.
var t0 = time.Unix(1_699_999_200, 0)

const maxDuration = time.Duration(1<<63 - 1)

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"0", 0, true},
		{"1", time.Second, true},
		{"120", 2 * time.Minute, true},
		{" 7\t", 7 * time.Second, true},
		{"9223372036", 9223372036 * time.Second, true},
		{"9223372037", maxDuration, true},
		{"99999999999999999999999999", maxDuration, true},
		{t0.Add(90 * time.Second).UTC().Format(http.TimeFormat), 90 * time.Second, true},
		{t0.Add(-time.Hour).UTC().Format(http.TimeFormat), 0, true},
		{"Tuesday, 14-Nov-23 22:01:30 GMT", 90 * time.Second, true}, // RFC 850
		{"Tue Nov 14 22:01:30 2023", 90 * time.Second, true},        // asctime
		{"", 0, false},
		{"-1", 0, false},
		{"+5", 0, false},
		{"1.5", 0, false},
		{"5s", 0, false},
		{"0x10", 0, false},
		{"soon", 0, false},
		{"Tue, 14 Nov 2023 25:00:00 GMT", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, ok := httpclient.ParseRetryAfter(tt.in, t0)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestParseRateLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		lines []string
		want  []httpclient.Quota
	}{
		{"floodgate denial", []string{`"burst";r=0;t=1`}, []httpclient.Quota{{Name: "burst", Remaining: 0, Reset: 1, HasReset: true}}},
		{"token name", []string{`default;r=5;t=30`}, []httpclient.Quota{{Name: "default", Remaining: 5, Reset: 30, HasReset: true}}},
		{"no t", []string{`"a";r=0`}, []httpclient.Quota{{Name: "a"}}},
		{"two lines join", []string{`"a";r=1;t=2`, `"b";r=0;t=9`}, []httpclient.Quota{
			{Name: "a", Remaining: 1, Reset: 2, HasReset: true}, {Name: "b", Reset: 9, HasReset: true}}},
		{"negative t dropped", []string{`"a";r=0;t=-4`}, []httpclient.Quota{{Name: "a"}}},
		{"missing r skipped", []string{`"a";t=3, "b";r=2`}, []httpclient.Quota{{Name: "b", Remaining: 2}}},
		{"negative r skipped", []string{`"a";r=-1;t=3`}, nil},
		{"decimal r skipped", []string{`"a";r=0.5;t=3`}, nil},
		{"inner list skipped", []string{`("a" "b");r=0;t=3`}, nil},
		{"malformed", []string{`"burst;r=0`}, nil},
		{"garbage", []string{`r=0;;t=1`}, nil},
		{"empty", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := httpclient.ParseRateLimit(tt.lines); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseRateLimit(%q) = %+v, want %+v", tt.lines, got, tt.want)
			}
		})
	}
}

func TestParseRateLimitPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		lines []string
		want  []httpclient.Policy
	}{
		{"floodgate stack", []string{`"burst";q=5;w=1, "hourly";q=100000;w=3600`}, []httpclient.Policy{
			{Name: "burst", Quota: 5, Window: 1, HasWindow: true}, {Name: "hourly", Quota: 100000, Window: 3600, HasWindow: true}}},
		{"no w", []string{`"a";q=5`}, []httpclient.Policy{{Name: "a", Quota: 5}}},
		{"missing q skipped", []string{`"a";w=5`}, nil},
		{"string q skipped", []string{`"a";q="5";w=1`}, nil},
		{"malformed", []string{`"a";q=5;w=1,,`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := httpclient.ParseRateLimitPolicy(tt.lines); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseRateLimitPolicy(%q) = %+v, want %+v", tt.lines, got, tt.want)
			}
		})
	}
}

func TestRetryDelay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		h      http.Header
		want   time.Duration
		wantOK bool
	}{
		{"none", http.Header{}, 0, false},
		{"retry-after", http.Header{"Retry-After": {"3"}}, 3 * time.Second, true},
		{"retry-after wins over RateLimit", http.Header{"Retry-After": {"3"}, "Ratelimit": {`"a";r=0;t=10`}}, 3 * time.Second, true},
		{"bad retry-after falls to RateLimit", http.Header{"Retry-After": {"soon"}, "Ratelimit": {`"a";r=0;t=10`}}, 10 * time.Second, true},
		{"exhausted policy", http.Header{"Ratelimit": {`"burst";r=0;t=1`}}, time.Second, true},
		{"quota left asks no wait", http.Header{"Ratelimit": {`"burst";r=4;t=1`}}, 0, false},
		{"longest exhausted policy", http.Header{"Ratelimit": {`"a";r=0;t=2, "b";r=3;t=900, "c";r=0;t=7`}}, 7 * time.Second, true},
		{"window from RateLimit-Policy", http.Header{
			"Ratelimit": {`"hourly";r=0`}, "Ratelimit-Policy": {`"burst";q=5;w=1, "hourly";q=100000;w=3600`}}, time.Hour, true},
		{"no t and no policy", http.Header{"Ratelimit": {`"hourly";r=0`}, "Ratelimit-Policy": {`"other";q=5;w=1`}}, 0, false},
		{"huge t saturates", http.Header{"Ratelimit": {`"a";r=0;t=999999999999999`}}, maxDuration, true},
		{"malformed RateLimit", http.Header{"Ratelimit": {`"a";r=0;t=`}}, 0, false},
		{"http-date", http.Header{"Retry-After": {t0.Add(time.Minute).UTC().Format(http.TimeFormat)}}, time.Minute, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := httpclient.RetryDelay(tt.h, t0)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("RetryDelay(%v) = %v, %v; want %v, %v", tt.h, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
