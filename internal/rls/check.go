package rls

import (
	"fmt"
	"strings"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/rlsconfig"
)

// CheckRule reports what keeps s from enforcing r, a rule of a loaded
// configuration: limits s's store refuses (on Redis, a sliding window of a
// year, say) or an algorithm a rate-limit service cannot answer with. As
// rlsconfig.CheckRules' check it keeps the file of such a rule out of the
// configuration, reported at its file and line, so that SetRules is never
// handed a configuration it would refuse whole. The limiter it makes for
// r's limits is kept for the next SetRules, which would make it again. It
// is safe for concurrent use.
func (s *Service) CheckRule(r *rlsconfig.Rule) error {
	if r.Unlimited || r.DenyAll {
		return nil
	}
	limits := named(r)
	if err := enforceable(limits); err != nil {
		return err
	}
	key := limitsKey(limits)
	if st := s.state.Load(); st != nil && st.byLimits[key] {
		return nil // the store took these limits for the configuration in force
	}
	c, err := s.compileLimits(limits)
	if err != nil {
		return fmt.Errorf("rls: the store cannot enforce this rule: %w", err)
	}
	s.checkMu.Lock()
	defer s.checkMu.Unlock()
	if s.checked == nil {
		s.checked = make(map[string][]*compiled)
	}
	s.checked[key] = append(s.checked[key], c)
	return nil
}

// enforceable reports an algorithm among limits that a rate-limit service
// cannot answer with.
func enforceable(limits []core.Limit) error {
	for _, l := range limits {
		if l.Algorithm == core.LeakyBucket || l.Algorithm == core.Concurrency {
			return fmt.Errorf("rls: %v cannot be answered by a rate-limit service (Envoy neither waits for a turn nor ends a lease); use another algorithm", l.Algorithm)
		}
	}
	return nil
}

// limitsKey identifies limits, for what CheckRule has checked.
func limitsKey(limits []core.Limit) string {
	var b strings.Builder
	for _, l := range limits {
		fmt.Fprintf(&b, "%#v\x00", l)
	}
	return b.String()
}

// takeChecked returns a limiter CheckRule made for limits, or nil.
func (s *Service) takeChecked(key string) *compiled {
	s.checkMu.Lock()
	defer s.checkMu.Unlock()
	cs := s.checked[key]
	if len(cs) == 0 {
		return nil
	}
	c := cs[len(cs)-1]
	s.checked[key] = cs[:len(cs)-1]
	return c
}
