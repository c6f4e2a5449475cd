-- Token bucket, as core's tokenBucket, which mirrors x/time/rate: the state
-- is a float64 token count and the instant it was last updated, stored as
-- 'tokens seconds nanoseconds' with the count printed so that it reads
-- back as the same double (see count). Lua's numbers are the
-- same IEEE doubles as Go's float64, and every operation below is done in
-- the same order as in Go, so the results are bit for bit the same.
-- ARGV[4]: events per second; ARGV[5]: the burst; ARGV[6]: '1' to lend
-- (WithOverdraft: admit any cost while not in debt, and count one request
-- more into debt), '0' not.
-- The call's parameters, set by the body: those three, and the tokens
-- refilled in 2 ns (slack), computed as Go computes it.
local rate, burst, lend, slack

-- Each call of a Lua function costs about as much as a dozen lines of
-- arithmetic here: the helpers below are called as few times as they can
-- be, and the searches' steps are inlined in fitsAfter.

-- level is the token count at t of a bucket holding tk at lst
-- (x/time/rate's advance, with Go's Duration.Seconds for the elapsed time:
-- whole seconds plus the nanoseconds left over, over 1e9).
local function level(tk, lst, t)
  if t <= lst then
    -- Only a state kept across a limit change (a Dynamic's key) may hold
    -- more than the burst.
    if tk > burst then
      return burst
    end
    return tk
  end
  local sec, nsec = 0, t - lst
  if nsec >= 1e9 then
    sec, nsec = idiv(nsec, 1e9)
  end
  tk = tk + (sec + nsec / 1e9) * rate
  if tk > burst then
    return burst
  end
  return tk
end

-- fits is x/time/rate's test: what is left is not negative, or the wait
-- for the shortfall truncates to zero nanoseconds.
local function fits(tk, n)
  local left = tk - n
  return left >= 0 or (-left <= slack and -left / rate * 1e9 < 1)
end

-- whole is how many units fit in tk tokens: its whole part, and one more
-- when the fraction left is close enough for fits to admit it.
local function whole(tk)
  local n = 0
  if tk > 0 then
    n = floor(tk)
  end
  if fits(tk, n + 1) then
    n = n + 1
  end
  return n
end

-- fitsAfter is fits(level(tk, lst, now + d), n), in one call.
local function fitsAfter(tk, lst, d, n)
  local t = now + d
  if t <= lst then
    if tk > burst then
      tk = burst
    end
  else
    local sec, nsec = 0, t - lst
    if nsec >= 1e9 then
      sec, nsec = idiv(nsec, 1e9)
    end
    tk = tk + (sec + nsec / 1e9) * rate
    if tk > burst then
      tk = burst
    end
  end
  local left = tk - n
  return left >= 0 or (-left <= slack and -left / rate * 1e9 < 1)
end

-- wait is the shortest wait after now until n tokens fit, exact in whole
-- nanoseconds (core's tokenBucket.waitFor, step for step).
local function wait(tk, lst, n)
  local have = level(tk, lst, now)
  if fits(have, n) then
    return 0
  end
  local lead = 0
  if lst > now then
    lead = lst - now
  end
  -- How far past the last update the search may reach: the refill time
  -- of a whole burst (from a burst in debt, lending), an eighth more for
  -- float rounding, and a millisecond (bucket.go computes the same).
  local fill = burst / rate * 1e9
  if lend then
    fill = fill * 2
  elseif tk < 0 then
    fill = fill - tk / rate * 1e9 -- a grant ahead's debt (quota.lua)
  end
  local limit = lead + ceil(fill + fill / 8) + 1e6
  local d = lead + floor((n - have) / rate * 1e9)
  if d < 1 then
    d = 1
  end
  if d > limit then
    d = limit
  end
  -- The estimate is off by a few nanoseconds at most: step up to it...
  for _ = 1, 4 do
    if d > limit then
      break
    end
    if fitsAfter(tk, lst, d, n) then
      -- ...and down to the first nanosecond that fits.
      for _ = 1, 4 do
        if d == 1 or not fitsAfter(tk, lst, d - 1, n) then
          return d
        end
        d = d - 1
      end
      break
    end
    d = d + 1
  end
  -- Otherwise bracket the wait by galloping from d, then bisect.
  d = min(d, limit)
  local lo, hi = 0, 0
  if fitsAfter(tk, lst, d, n) then
    hi = d
    local step = 2
    while true do
      lo = max(hi - step, 0)
      if lo == 0 or not fitsAfter(tk, lst, lo, n) then
        break
      end
      hi, step = lo, step * 2
    end
  else
    lo = d
    local step = 1
    while true do
      hi = min(lo + step, limit)
      if hi == limit or fitsAfter(tk, lst, hi, n) then
        break
      end
      lo, step = hi, step * 2
    end
  end
  while hi - lo > 1 do
    local mid = lo + floor((hi - lo) / 2)
    if fitsAfter(tk, lst, mid, n) then
      hi = mid
    else
      lo = mid
    end
  end
  return hi
end

-- count formats a token count and its trailing space as stored: a whole
-- count (below 2^31 either way, as every count here is) as an integer,
-- which reads back as the same double (-0 as 0, which nothing here tells
-- apart) and is printed far faster, any other in 17 significant digits,
-- which read back as the same double.
local function count(tk)
  if tk == floor(tk) and tk > -COUNT and tk < COUNT then
    return format('%d ', tk)
  end
  return format('%.17g ', tk)
end

-- CALL --
rate, burst, lend = nums[ARGV[4]] or num(ARGV[4]), nums[ARGV[5]] or num(ARGV[5]), ARGV[6] == '1'
slack = 2 * rate / 1e9
local state = redis.call('GET', key)

local tokens, last = burst, now
if state then
  local tk, s, n = string.match(state, '^(%S+) (%-?%d+) (%d+)$')
  tk = tonumber(tk)
  -- Tokens are finite, and in debt by at most a burst (of any limit: a
  -- Dynamic's key may hold a larger one's debt), or by a grant ahead's
  -- refill of half a lease (quota.lua).
  if not tk or not (tk > -COUNT and tk < math.huge) then
    return malformed(state)
  end
  -- The last update is never after now (common.lua): one that is is read
  -- as now, its tokens kept, refilling from now.
  local l = instant(s, n, 0)
  if l == nil then
    return malformed(state)
  elseif l then
    tokens, last = tk, l
  end
end

-- A grant charges what fits now, up to the cost asked (never with
-- WithOverdraft: New refuses local quota there). A grant ahead
-- (common.lua) that finds nothing fits now may charge what refills within
-- ahead: the bucket goes into debt by at most that (debt), and the units
-- are due when it is out of it.
local grant, debt = op == 'g', 0
if grant or op == 'f' then
  local h = level(tokens, last, now)
  local fit = whole(h)
  if fit == 0 and ahead > 0 then
    debt = ahead / 1e9 * rate
    fit = whole(h + debt)
  end
  if op == 'f' then
    return {fit, -1} -- a stack's grant (stack.lua): what fits, and no window
  end
  cost, op = max(1, min(cost, fit)), 'a'
end

local have, reset, result
if op == 'r' then
  if not state then
    return {0, 0, 0, 0}
  end
  tokens = min(burst, level(tokens, last, now) + cost)
  last = max(last, now)
  reset = wait(tokens, last, burst)
  result = {1, 0, 0, reset}
else
  -- level(tokens, last, now) and fits(have, need), inline (each call of
  -- a function costs more than their arithmetic): last is never after now.
  have = tokens
  if now > last then
    local sec, nsec = 0, now - last
    if nsec >= 1e9 then
      sec, nsec = idiv(nsec, 1e9)
    end
    have = have + (sec + nsec / 1e9) * rate
  end
  if have > burst then
    have = burst
  end
  -- What must be there for the request to go: its cost, or, lending,
  -- nothing (not in debt); a refusal waits for that alone.
  local need = cost
  if lend then
    need = 0
  end
  local short = have + debt - need
  local ok = short >= 0 or (-short <= slack and -short / rate * 1e9 < 1)
  if ok and not grant and db.R == nil then
    -- An admission alone (not a grant, not a stack's layer: those need
    -- the whole reply) answers {2, m, x}: the tokens left are m * 2^x,
    -- exactly, from which Go works out remaining and the reset as core
    -- does (bucket in bucket.go) at a fraction of the cost here. The TTL
    -- counts from the reset's estimate (x - x % 1 is floor(x), exactly,
    -- without a call), which the exact reset (core's search) is within a
    -- few nanoseconds of: the key stays at least the margin less a
    -- millisecond past whole, and the margin is at least 1 ms. The update
    -- is now (last is never after now).
    tokens = have - cost
    local d = (burst - tokens) / rate * 1e9
    local ttl = format('%d', ceil((d - d % 1) / 1e6) + margin)
    if tokens % 1 == 0 then
      redis.call('SET', key, format('%d %d %d', tokens, R, now), 'PX', ttl)
      return {2, tokens, 0}
    end
    redis.call('SET', key, count(tokens) .. stamp(now), 'PX', ttl)
    local m, x = math.frexp(tokens)
    return {2, m * 9007199254740992, x - 53}
  end
  local tk = have -- what remaining counts from
  if ok then
    tk = have - cost
  end
  -- Remaining: the whole tokens, plus one when the fraction left is close
  -- enough for the test to admit it; lending, one more while not in debt.
  local left = 0
  if tk > 0 then
    left = floor(tk)
  end
  if lend then
    while fits(tk - left, 0) do
      left = left + 1
    end
  elseif left < burst and fits(tk, left + 1) then
    left = left + 1
  end
  if not ok then
    reset = wait(tokens, last, burst)
    -- Refused: nothing to write, but a state read clamped is written back,
    -- and a key found without a TTL, or with one ending before its quota
    -- is whole (a Dynamic's key whose limit changed), gets one.
    if clamped then
      fix('SET', key, count(tokens) .. stamp(last), 'PX', ceil(reset / 1e6) + margin)
    else
      local ttl = reset > 0 and redis.call('PTTL', key)
      if ttl and (ttl == -1 or ttl < ceil(reset / 1e6)) then
        fix('PEXPIRE', key, ceil(reset / 1e6) + margin)
      end
    end
    local r = {0, left, wait(tokens, last, need), reset}
    if grant then
      r[5], r[6], r[7], r[8], r[9], r[10] = 0, 0, R, now, holders(), -1
    end
    return r
  end
  tokens = tk
  if last < now then
    last = now
  end
  reset = wait(tokens, last, burst)
  result = {1, left, 0, reset}
  if grant then
    if tokens < 0 then
      result[3] = wait(tokens, last, 0) -- a grant ahead's last unit is due then
    end
    result[5], result[6], result[7], result[8], result[9], result[10] = 0, cost, R, now, holders(), -1
  end
end
redis.call('SET', key, count(tokens) .. stamp(last), 'PX', format('%d', ceil(reset / 1e6) + margin))
return result
