-- Shared by every floodgate script. Instants are nanoseconds, but Lua numbers
-- are doubles, exact only below 2^53 (104 days of nanoseconds), and the Unix
-- epoch is 1.8e18 ns away. So the script works relative to the current
-- second R: an instant stored as whole seconds s and nanoseconds n is
-- (s - R) * 1e9 + n here, exact for instants within 104 days of now. Limits
-- span at most 2^52 ns (checked in Go), so every instant, sum and
-- difference below stays under 2^53.
--
-- KEYS[1]: the state key.
-- ARGV[1]: 'a' to charge (allow), 'r' to refund.
-- ARGV[2]: the cost, a whole number >= 1.
-- ARGV[3], ARGV[4]: a test clock's seconds and nanoseconds, or '' and ''
--   for the server's TIME (microseconds).
-- ARGV[5]: extra milliseconds of TTL past the instant the key is whole.
-- ARGV[6...]: the algorithm's parameters.
-- Reply: {allowed (0/1), remaining, retry after ns, reset after ns}.

local E9 = 1000000000
local STALE = 9007190  -- seconds: a stored instant further from now is not representable

-- idiv returns floor(a / b) and the remainder, exact for integers below 2^53.
local function idiv(a, b)
  local q = math.floor(a / b)
  local r = a - q * b
  if r < 0 then
    q = q - 1
    r = r + b
  elseif r >= b then
    q = q + 1
    r = r - b
  end
  return q, r
end

-- muldiv returns floor(a * b / m) and the remainder, for integers with
-- a < 2^31, b < 2^53 and m <= 2^52, where a * b itself may not be exact. The
-- quotient is exact whenever it is below 2^53; callers cap larger ones.
local function muldiv(a, b, m)
  local a0 = a
  local qb, rb = idiv(b, m)
  -- a * b = a * qb * m + a * rb: the first part divides exactly, and a * rb
  -- is divided by binary long multiplication, r staying below m and every
  -- sum below 2m.
  local q, r = 0, 0
  local bit = 1073741824 -- 2^30; a < 2^31
  while bit >= 1 do
    q = q * 2
    r = r * 2
    if r >= m then
      r = r - m
      q = q + 1
    end
    if a >= bit then
      a = a - bit
      r = r + rb
      if r >= m then
        r = r - m
        q = q + 1
      end
    end
    bit = bit / 2
  end
  return a0 * qb + q, r
end

local R, now
if ARGV[3] ~= '' then
  R, now = tonumber(ARGV[3]), tonumber(ARGV[4])
else
  local t = redis.call('TIME')
  R, now = tonumber(t[1]), tonumber(t[2]) * 1000
end

-- rel turns a stored (seconds, nanoseconds) pair into an instant here, or
-- nil when it is too far from now to be exact (the state is then long idle).
local function rel(s, n)
  if s < R - STALE or s > R + STALE then
    return nil
  end
  return (s - R) * E9 + n
end

-- abs formats an instant as stored: seconds and nanoseconds.
local function abs(t)
  local q, r = idiv(t, E9)
  return string.format('%.0f %.0f', R + q, r)
end

-- windowStart is the start of the period-long window holding now, windows
-- being aligned to multiples of period since the Unix epoch.
local function windowStart(period)
  -- (R * 1e9) mod period, then now's offset in the window.
  local base
  if period % E9 == 0 then
    local _, rs = idiv(R, period / E9)
    base = rs * E9
  else
    local _, x = idiv(R, period)
    -- x * 1e9 mod period by doubling: every value stays below 2 * period.
    base = 0
    local bit = 536870912 -- 2^29; 1e9 < 2^30
    local k = E9
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

local key = KEYS[1]
local op = ARGV[1]
local cost = tonumber(ARGV[2])
local margin = tonumber(ARGV[5])

-- ttl is the key's time to live in ms: until it is whole again (reset ns
-- from now), plus the margin.
local function ttl(reset)
  return math.max(1, math.ceil(reset / 1000000) + margin)
end

-- save writes the state with its TTL.
local function save(value, reset)
  redis.call('SET', key, value, 'PX', ttl(reset))
end

-- repair gives a key found without a TTL one; a denial writes nothing else.
local function repair(reset)
  if reset > 0 and redis.call('PTTL', key) == -1 then
    redis.call('PEXPIRE', key, ttl(reset))
  end
end

-- fields reads the stored state: n numbers separated by spaces, or nil
-- when the key does not exist. Anything else is an error, never a fresh
-- quota: a state that cannot be read must not admit by accident.
local function fields(n)
  local v = redis.call('GET', key)
  if not v then
    return nil
  end
  local f = {}
  for w in string.gmatch(v, '%S+') do
    local x = tonumber(w)
    if x == nil or x ~= x or x == math.huge or x == -math.huge then
      break
    end
    f[#f + 1] = x
  end
  if #f ~= n then
    return redis.error_reply('floodgate: malformed state at ' .. key .. ': ' .. string.sub(v, 1, 64))
  end
  return f
end
