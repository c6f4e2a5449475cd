-- Shared by the window algorithms: windows are aligned to multiples of the
-- period since the Unix epoch, computed exactly from the current second R.

-- windowStart is the start of the period-long window holding now, windows
-- being aligned to multiples of period since the Unix epoch.
local function windowStart(period)
  -- (R * 1e9) mod period, then now's offset in the window.
  local base
  if period % 1e9 == 0 then
    local _, rs = idiv(R, period / 1e9)
    base = rs * 1e9
  else
    local _, x = idiv(R, period)
    -- x * 1e9 mod period by doubling: every value stays below 2 * period.
    base = 0
    local bit = 536870912 -- 2^29; 1e9 < 2^30
    local k = 1e9
    while bit >= 1 do
      base = base * 2
      if base >= period then base = base - period end
      if k >= bit then
        k = k - bit
        base = base + x
        if base >= period then base = base - period end
      end
      bit = bit / 2
    end
  end
  local _, m = idiv(base + now, period)
  return now - m
end

-- LONG is the longest period windowStart takes (maxSpan in scripts.go,
-- 2^52 ns less 2 s): every instant it handles then lies within two periods
-- of now, exact as a double. A fixed window may be longer, up to 2^56 ns
-- (about 834 days), if its period is whole seconds (checked in Go): it
-- then works in seconds (longStart), as its windows start on whole seconds.
local LONG = 4503597627370496

-- longStart returns, for a period longer than LONG, the start of the window
-- holding now in seconds since the epoch, and that start relative to R in
-- ns as the other instants are: exact, since it is whole seconds, 1e9 is
-- 2^9 * 5^9, and the seconds (under 2^56 / 1e9) times 5^9 are below 2^53.
local function longStart(period)
  local _, off = idiv(R, period / 1e9)
  return R - off, -off * 1e9
end

-- CALL --
