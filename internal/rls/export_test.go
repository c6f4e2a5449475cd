package rls

// LocalCacheSlots returns the number of entries s's local cache holds at
// most (0 without one).
func LocalCacheSlots(s *Service) int {
	if s.cache == nil {
		return 0
	}
	return len(s.cache.slots)
}

// LocalCacheLen returns how many entries of s's local cache hold a
// refusal now.
func LocalCacheLen(s *Service) int {
	now := s.c.Clock.Now()
	n := 0
	for i := range s.cache.slots {
		if e := s.cache.slots[i].e.Load(); e != nil && now < e.until {
			n++
		}
	}
	return n
}
