package doclinks

// Reset exists only in a test file, so [Counter.Reset] must not resolve.
func (c *Counter) Reset() { c.N = 0 }
