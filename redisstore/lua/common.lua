-- Shared by every floodgate script, and run on every call: Redis makes a
-- script's functions again each time it runs, so the scripts define few and
-- write the rest inline.
--
-- Instants are nanoseconds, but Lua numbers are doubles, exact only below
-- 2^53 (104 days of nanoseconds), and the Unix epoch is 1.8e18 ns away. So
-- the script works relative to the current second R: an instant stored as
-- whole seconds s and nanoseconds n is (s - R) * 1e9 + n here, exact for
-- instants within 104 days of now. Limits span at most 2^52 ns (checked in
-- Go), so every instant, sum and difference below stays under 2^53. A
-- stored instant more than STALE seconds from now is long past (or the
-- clock stepped) and is not read.
--
-- KEYS[1]: the state key.
-- ARGV[1]: 'a' to charge (allow), 'r' to refund.
-- ARGV[2]: the cost, a whole number >= 1.
-- ARGV[3], ARGV[4]: a test clock's seconds and nanoseconds, or '' and ''
--   for the server's TIME (microseconds).
-- ARGV[5]: extra milliseconds of TTL past the instant the key is whole
--   (>= 1, so every TTL set below is at least 1 ms).
-- ARGV[6...]: the algorithm's parameters.
-- Reply: {allowed (0/1), remaining, retry after ns, reset after ns}.
-- A stored state that does not parse is an error, never a fresh quota: a
-- state that cannot be read must not admit by accident. Each algorithm
-- reads its own state (a string with GET, or a sorted set).

local key, op, cost, margin = KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[5])
local STALE = 9007190
local R, now
if ARGV[3] == '' then
  local t = redis.call('TIME')
  R, now = tonumber(t[1]), tonumber(t[2]) * 1000
else
  R, now = tonumber(ARGV[3]), tonumber(ARGV[4])
end

-- idiv returns floor(a / b) and the remainder, exact for integers below 2^53.
local function idiv(a, b)
  local q = math.floor(a / b)
  local r = a - q * b
  if r < 0 then
    return q - 1, r + b
  elseif r >= b then
    return q + 1, r - b
  end
  return q, r
end

-- stamp formats an instant as stored: seconds and nanoseconds.
local function stamp(t)
  local q, r = idiv(t, 1e9)
  return string.format('%.0f %.0f', R + q, r)
end
