package obsreg

import (
	"strings"
	"sync"
	"testing"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/option"
)

type health struct{}

func (health) Health() core.Health { return core.Health{} }

func TestAddBreaker(t *testing.T) {
	errs := &option.Errors{Prefix: "x: "}
	var list []Breaker
	list = AddBreaker(errs, list, Breaker{Name: "redis", Health: health{}})
	list = AddBreaker(errs, list, Breaker{Name: "", Health: health{}})
	list = AddBreaker(errs, list, Breaker{Name: "redis", Health: health{}})
	list = AddBreaker(errs, list, Breaker{Name: "other", Health: health{}})
	if len(list) != 2 || list[0].Name != "redis" || list[1].Name != "other" {
		t.Fatalf("list: %+v, want redis and other", list)
	}
	msg := errs.Err().Error()
	for _, want := range []string{`x: breaker name is empty`, `x: two breakers are named "redis"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("errors %q lack %q", msg, want)
		}
	}
}

func TestSeries(t *testing.T) {
	var s Series[int]
	if s.Get(Key{"a", "http"}) != nil || len(s.Map()) != 0 {
		t.Fatal("a zero Series is not empty")
	}
	var made sync.Map
	var wg sync.WaitGroup
	got := make([]*int, 16)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = s.Add(Key{"a", "http"}, func() *int {
				n := new(int)
				made.Store(n, true)
				return n
			})
		}()
	}
	wg.Wait()
	for _, p := range got {
		if p != got[0] {
			t.Fatal("two callers got different series for one key")
		}
	}
	n := 0
	made.Range(func(any, any) bool { n++; return true })
	if n != 1 {
		t.Errorf("made %d series for one key, want 1", n)
	}
	b := s.Add(Key{"a", "grpc"}, func() *int { return new(int) })
	if s.Get(Key{"a", "grpc"}) != b || s.Get(Key{"a", "http"}) != got[0] || len(s.Map()) != 2 {
		t.Errorf("after a second key: %v", s.Map())
	}
}
