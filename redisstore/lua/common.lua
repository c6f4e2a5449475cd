-- Shared by every floodgate script. Every file of lua/ is in two parts: its
-- head, before the line '-- CALL --' (all of a file without it is body),
-- defines helpers and declares the state they read; its body runs on every
-- call and sets that state first. A script sent with EVAL (scripts.go) is
-- the files one after the other, heads and bodies, so Redis makes every
-- helper again on each call; in the Redis Functions library (library.go)
-- the heads run once, when the library loads, and each registered
-- function's callback runs the bodies. Redis runs one function at a time,
-- so state set at the start of a call is the call's own until it returns.
-- A head reads no per-call value (KEYS, ARGV, the clock) and never `redis`
-- while it runs: a library's load sees another `redis` than its calls.
--
-- Instants are nanoseconds, but Lua numbers are doubles, exact only below
-- 2^53 (104 days of nanoseconds), and the Unix epoch is 1.8e18 ns away. So
-- the script works relative to the current second R: an instant stored as
-- whole seconds s and nanoseconds n is (s - R) * 1e9 + n here, exact for
-- instants within 104 days of now. Limits span at most 2^52 ns (checked in
-- Go), so every instant, sum and difference below stays under 2^53; a
-- longer fixed window works in seconds instead (windows.lua).
--
-- Stored instants (see instant below) are range-checked. One more than
-- STALE seconds past is a key idle longer than any limit's span: whole
-- again, as a key never seen. None is read further ahead of now than its
-- algorithm ever writes one, its lead: the token bucket's last update and
-- the windows' starts and log entries never after now; GCRA's theoretical
-- arrival and the leaky bucket's drain instant at most their span ahead;
-- warm-up's next free instant at most a cold request of the whole burst
-- ahead (for a Dynamic, whose key may hold another limit's state, the
-- longest any limit on Redis writes); a lease's expiry at most its TTL
-- ahead (concurrency.lua). An instant further ahead comes from a server
-- clock that stepped back by more than that, or from a corrupt state: it is
-- read at its lead, so that what the state counts stays counted (never a
-- fresh quota, as in core: a state in the future stays in the future) and
-- no wait, reset or TTL is longer than one the limit makes on its own.
-- Such a state is written back as read, a refusal included, through fix,
-- so that waiting the RetryAfter admits and the key's TTL is bounded.
--
-- KEYS[1]: the state key.
-- ARGV[1]: the operation, then for a test clock a space and its seconds
--   and nanoseconds ('a 1764115200 250000000'); alone, the server's TIME
--   (microseconds) is now, and in a stack's layer (stack.lua) the stack's
--   instant. The operation: 'a' to charge (allow), 'r' to refund, 'g' to grant a local
--   quota lease (GCRA, token bucket and fixed window): charge what fits
--   now, up to the cost, as 'a' would charge that many (at least one, so
--   that nothing fitting is refused as a request of one would be); the
--   reply gains six numbers: the layer its decision names (0 but in a
--   stack), the units charged (0 when refused), the server's instant in
--   seconds and ns (a fixed window's return names it, see
--   fixedwindow.lua), how many instances hold a lease on the key
--   (quota.lua), and the ns until the earliest window the lease must end
--   with ends (-1: none). 'G' is a grant ahead (quota.lua): a GCRA's or a
--   token bucket's grant that, when fewer units than the cost fit now,
--   may also charge units that will fit within half a lease, and answers
--   in the retry-after place the ns until the last of them fits. 'f' (a
--   stack's grant) answers {fit, window end} with no write.
-- ARGV[2]: the cost, a whole number >= 1.
-- ARGV[3]: extra milliseconds of TTL past the instant the key is whole
--   (>= 1, so every TTL set below is at least 1 ms).
-- ARGV[4...]: the algorithm's parameters.
-- Reply: {allowed (0/1), remaining, retry after ns, reset after ns}; a
-- token bucket's admission alone answers {2, m, x} (tokenbucket.lua).
-- A stored state that does not parse, or holds a number no state of the
-- algorithm can hold (nanoseconds of 1e9 or more, a count below 0 or from
-- 2^31, permits or tokens not finite), is an error, never a fresh quota: a
-- state that cannot be read must not admit by accident. So is a key of
-- another Redis type (WRONGTYPE). Each algorithm reads its own state (a
-- string with GET, or a sorted set).

local STALE = 9007190
-- COUNT is 2^31: every count a state holds is below it (Events and Burst
-- are at most 2^31 - 1, and a count above Events comes only from a
-- Dynamic's larger limit).
local COUNT = 2147483648

-- The call's state, set by the body below: the state key, the operation,
-- the cost, the TTL margin, the current second R and now within it (see
-- above); clamped (see instant); fix, redis.call for writes that repair a
-- state rather than charge it (a state read at its lead, a key without a
-- TTL): a stack (stack.lua) holds a layer's writes until every layer
-- admits, but makes these at once, even when it refuses; db, the `redis`
-- of the call (a stack's layer gets a recorder in its place); ahead, how
-- far past what fits now a grant may charge, in ns (0 but for a grant
-- ahead, quota.lua).
local key, op, cost, margin, R, now, clamped, fix, db, ahead

-- Lua's library functions, taken on the first call: a library sees no
-- `math` or `string` while it loads, and a local is cheaper to reach than
-- a global's field on every call.
local floor, ceil, min, max, format

-- nums holds the per-limit parameters read so far (ARGV[3...] but a
-- call's own values), by their text: a library parses each once, not on
-- every call. It is emptied when it grows past 4096.
local nums, nnums = {}, 0

-- num reads a per-limit parameter: a number's text, as tonumber reads it.
-- The hot paths look in nums first (nums[s] or num(s)): a call costs more
-- than the lookup.
local function num(s)
  local v = nums[s]
  if v == nil then
    v = tonumber(s)
    if nnums >= 4096 then
      nums, nnums = {}, 0
    end
    nums[s], nnums = v, nnums + 1
  end
  return v
end

-- idiv returns floor(a / b) and the remainder, exact for integers below 2^53.
local function idiv(a, b)
  local q = floor(a / b)
  local r = a - q * b
  if r < 0 then
    return q - 1, r + b
  elseif r >= b then
    return q + 1, r - b
  end
  return q, r
end

-- stamp formats an instant as stored: seconds and nanoseconds. Both are
-- whole numbers, which '%d' prints exactly (Lua 5.1 converts to a 64-bit
-- integer), and far faster than '%.0f'.
local function stamp(t)
  if t >= 0 and t < 1e9 then
    return format('%d %d', R, t)
  end
  local q, r = idiv(t, 1e9)
  return format('%d %d', R + q, r)
end

-- instant reads a stored instant, whole seconds s and nanoseconds n as
-- matched, relative to R: false if it is more than STALE seconds past,
-- else the instant, at most now + lead (clamped set if it was further
-- ahead: the state read is not the one stored, and is written back); nil
-- if n is not a count of nanoseconds (below 1e9).
local function instant(s, n, lead)
  s, n = tonumber(s), tonumber(n)
  if not s or not n or n >= 1e9 then
    return nil
  end
  if s < R - STALE then
    return false
  end
  local t = now + lead
  if s <= R + STALE then
    local x = (s - R) * 1e9 + n
    if x <= t then
      return x
    end
  end
  clamped = true
  return t
end

-- malformed is the error reply for a state that cannot be read.
local function malformed(state)
  return redis.error_reply('floodgate: malformed state at ' .. key .. ': ' .. string.sub(tostring(state), 1, 64))
end

-- CALL --
if not floor then
  floor, ceil, min, max, format = math.floor, math.ceil, math.min, math.max, string.format
end
key, op, cost, margin = KEYS[1], ARGV[1], tonumber(ARGV[2]), nums[ARGV[3]] or num(ARGV[3])
R, now = redis.R, redis.now -- a stack's instant (stack.lua), or nil
if R then
elseif #op == 1 then
  local t = redis.call('TIME')
  R, now = t[1] + 0, t[2] * 1000
else
  local s, n
  op, s, n = string.match(op, '^(%a) (%-?%d+) (%d+)$')
  R, now = tonumber(s), tonumber(n)
end
clamped, ahead = false, 0
fix = redis.fix or redis.call
db = redis
