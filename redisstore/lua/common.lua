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

-- PATTERNS match a stored state of 2, 3 or 4 fields.
local PATTERNS = {nil, '^(%S+) (%S+)$', '^(%S+) (%S+) (%S+)$', '^(%S+) (%S+) (%S+) (%S+)$'}

local key = KEYS[1]
local op = ARGV[1]
local cost = tonumber(ARGV[2])
local margin = tonumber(ARGV[5])

-- save writes the state with its TTL in ms: until the key is whole again
-- (reset ns from now), plus the margin.
local function save(value, reset)
  redis.call('SET', key, value, 'PX', math.max(1, math.ceil(reset / 1000000) + margin))
end

-- repair gives a key found without a TTL one; a denial writes nothing else.
local function repair(reset)
  if reset > 0 and redis.call('PTTL', key) == -1 then
    redis.call('PEXPIRE', key, math.max(1, math.ceil(reset / 1000000) + margin))
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
  local f = {string.match(v, PATTERNS[n])}
  for i = 1, n do
    local x = tonumber(f[i])
    if x == nil or x ~= x or x == math.huge or x == -math.huge then
      return redis.error_reply('floodgate: malformed state at ' .. key .. ': ' .. string.sub(v, 1, 64))
    end
    f[i] = x
  end
  return f
end
