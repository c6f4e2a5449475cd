package rls

import (
	"context"
)

// shadow decides the shadow descriptors of an admitted request, which
// enforcing them would have charged; their refusals refuse nothing.
func (s *Service) shadow(ctx context.Context, items []item) {
	s.recall(items, func(it *item) bool { return it.rule.Shadow })
	if s.c.Multi != nil {
		s.shadowMulti(ctx, items)
	}
	for i := range items {
		it := &items[i]
		if !it.limited() || !it.rule.Shadow || it.multi {
			continue
		}
		if it.back {
			s.giveBack(ctx, it, true)
			continue
		}
		if !it.cached {
			s.allow(ctx, it)
		}
		s.observe(ctx, it, true)
	}
}
