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

-- CALL --
