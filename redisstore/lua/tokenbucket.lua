-- Token bucket, as core's tokenBucket, which mirrors x/time/rate: the state
-- is a float64 token count and the instant it was last updated, stored as
-- 'tokens seconds nanoseconds' with the count printed in 17 significant
-- digits, so that it reads back as the same double. Lua's numbers are the
-- same IEEE doubles as Go's float64, and every operation below is done in
-- the same order as in Go, so the results are bit for bit the same.
-- ARGV[6]: events per second; ARGV[7]: the burst; ARGV[8]: the tokens
-- refilled in 2 ns; ARGV[9]: how far past the last update a search for a
-- wait may reach, in ns.
local rate, burst, slack, reach = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])

-- seconds is Go's time.Duration(d).Seconds() for d > 0.
local function seconds(d)
  local sec, nsec = idiv(d, E9)
  return sec + nsec / 1e9
end

local function tokensAt(tokens, last, t)
  if t <= last then
    return tokens
  end
  tokens = tokens + seconds(t - last) * rate
  if tokens > burst then
    tokens = burst
  end
  return tokens
end

-- fits is x/time/rate's test: what is left is not negative, or the wait for
-- the shortfall truncates to zero nanoseconds.
local function fits(tokens, n)
  local left = tokens - n
  if left >= 0 then
    return true
  end
  if -left > slack then
    return false
  end
  return -left / rate * 1e9 < 1
end

local function fitsAfter(tokens, last, d, n)
  return fits(tokensAt(tokens, last, now + d), n)
end

-- search brackets the wait from the estimate d by galloping, then bisects.
local function search(tokens, last, d, limit, n)
  local lo, hi = 0, 0
  if fitsAfter(tokens, last, d, n) then
    hi = d
    local step = 2
    while true do
      lo = math.max(hi - step, 0)
      if lo == 0 or not fitsAfter(tokens, last, lo, n) then
        break
      end
      hi = lo
      step = step * 2
    end
  else
    lo = d
    local step = 1
    while true do
      hi = math.min(lo + step, limit)
      if hi == limit or fitsAfter(tokens, last, hi, n) then
        break
      end
      lo = hi
      step = step * 2
    end
  end
  while hi - lo > 1 do
    local mid = lo + math.floor((hi - lo) / 2)
    if fitsAfter(tokens, last, mid, n) then
      hi = mid
    else
      lo = mid
    end
  end
  return hi
end

-- waitFor is the shortest wait after now until n tokens fit, exact in whole
-- nanoseconds (core's tokenBucket.waitFor, step for step).
local function waitFor(tokens, last, n)
  local have = tokensAt(tokens, last, now)
  if fits(have, n) then
    return 0
  end
  local lead = math.max(0, last - now)
  local limit = lead + reach
  local d = lead + math.floor((n - have) / rate * 1e9)
  d = math.min(math.max(d, 1), limit)
  local ok = false
  local i = 0
  while i < 4 and d <= limit do
    if fitsAfter(tokens, last, d, n) then
      ok = true
      break
    end
    d = d + 1
    i = i + 1
  end
  if ok then
    for _ = 1, 4 do
      if d == 1 or not fitsAfter(tokens, last, d - 1, n) then
        return d
      end
      d = d - 1
    end
  end
  return search(tokens, last, math.min(d, limit), limit, n)
end

local function floorCount(t)
  if t <= 0 then
    return 0
  end
  return math.floor(t)
end

local function remaining(t)
  local n = floorCount(t)
  if n < burst and fits(t, n + 1) then
    n = n + 1
  end
  return n
end

local tokens, last = burst, now
local f = fields(3)
if f and f.err then
  return f
end
if f then
  local l = rel(f[2], f[3])
  -- An update more than 2^51 ns ahead (the clock stepped back weeks) is
  -- dropped, which keeps every wait below 2^53.
  if l and l - now <= 2251799813685248 then
    tokens, last = f[1], l
  end
end

if op == 'r' then
  if not f then
    return {0, 0, 0, 0}
  end
  tokens = math.min(burst, tokensAt(tokens, last, now) + cost)
  last = math.max(last, now)
  local reset = waitFor(tokens, last, burst)
  save(string.format('%.17g ', tokens) .. abs(last), reset)
  return {1, 0, 0, reset}
end

local have = tokensAt(tokens, last, now)
if fits(have, cost) then
  local left = have - cost
  local nlast = math.max(last, now)
  local reset = waitFor(left, nlast, burst)
  save(string.format('%.17g ', left) .. abs(nlast), reset)
  return {1, remaining(left), 0, reset}
end
local reset = waitFor(tokens, last, burst)
repair(reset)
return {0, remaining(have), waitFor(tokens, last, cost), reset}
