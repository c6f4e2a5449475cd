package main

import "testing"

func TestGCPercent(t *testing.T) {
	for _, tc := range []struct {
		name  string
		redis string
		gogc  string
		want  int
		set   bool
	}{
		{"Redis store, GOGC unset", "127.0.0.1:6379", "", redisGCPercent, true},
		{"Redis store, GOGC set", "127.0.0.1:6379", "150", 0, false},
		{"Redis store, GOGC off", "127.0.0.1:6379", "off", 0, false},
		{"in-memory store", "", "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := envOf(map[string]string{"GOGC": tc.gogc})
			s := &settings{}
			if tc.redis != "" {
				s.redis = &redisTarget{kind: "single", network: "tcp", addrs: []string{tc.redis}}
			}
			got, set := gcPercent(s, env)
			if got != tc.want || set != tc.set {
				t.Errorf("gcPercent = %d, %v; want %d, %v", got, set, tc.want, tc.set)
			}
		})
	}
}
