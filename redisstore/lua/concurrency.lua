-- Concurrency, as core's: the units a key has in flight, held by leases
-- that expire unless renewed, so that an instance that dies holding some
-- gives them back by itself. Standalone: the state is a sorted set, which
-- the other scripts' prelude (a GET) cannot read.
--
-- KEYS[1]: a sorted set. Each lease is a member '<cost>:<id>' scored by the
--   instant it expires, in microseconds since the Unix epoch (below 2^53
--   until the year 2255, so exact as a Lua double); the member '#' holds
--   the units held, as a negative score, below every expiry instant, and
--   is absent when none are. Expired leases are dropped, and their units
--   given back, by every call before it does anything else.
-- ARGV[1]: 'a' to admit a lease, 'l' to release one, 'n' to renew one,
--   'r' to give units back without a lease (Refund).
-- ARGV[2]: the cost, a whole number >= 1.
-- ARGV[3], ARGV[4]: a test clock's seconds and nanoseconds, or '' and ''
--   for the server's TIME.
-- ARGV[5]: extra milliseconds of TTL past the last lease's expiry.
-- ARGV[6]: the most units in flight (Events); ARGV[7]: the Period in ns,
--   the RetryAfter of a refusal; ARGV[8]: the lease TTL in microseconds.
-- ARGV[9]: the lease's member ('' for 'r').
-- Reply: {allowed (0/1), remaining, retry after ns, reset after ns} for
-- 'a'; {1 if the lease was held and now is not, 0, 0, 0} for 'l'; {1 if
-- the lease is held and renewed, 0, 0, 0} for 'n' (an expired or released
-- lease is never brought back); {1, 0, 0, 0} for 'r'.

local key, op, cost, margin = KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[5])
local events, period, ttl, member = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9]
local now
if ARGV[3] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[3]) * 1000000 + math.floor(tonumber(ARGV[4]) / 1000)
end

-- Numbers go to Redis as integers: Lua would write 1.7e+15.
local function int(x)
  return string.format('%.0f', x)
end

-- leaseCost reads a member's cost, or stops with an error: a state that
-- cannot be read must not admit by accident.
local function leaseCost(m)
  local c = tonumber(string.match(m, '^(%d+):'))
  if not c then
    error('floodgate: malformed lease ' .. string.sub(m, 1, 64) .. ' at ' .. key)
  end
  return c
end

local held = 0
local h = redis.call('ZSCORE', key, '#')
if h then
  held = -tonumber(h)
end
local expired = redis.call('ZRANGEBYSCORE', key, '(0', int(now))
if #expired > 0 then
  for _, m in ipairs(expired) do
    held = held - leaseCost(m)
  end
  redis.call('ZREMRANGEBYSCORE', key, '(0', int(now))
end
held = math.max(0, held)

-- finish writes the units held back and sets the key's TTL to the last
-- lease's expiry plus the margin; a key left with no lease is deleted.
local function finish()
  if held > 0 then
    redis.call('ZADD', key, int(-held), '#')
  else
    redis.call('ZREM', key, '#')
  end
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if #last == 0 or tonumber(last[2]) <= 0 then
    redis.call('DEL', key)
    return
  end
  redis.call('PEXPIRE', key, math.ceil((tonumber(last[2]) - now) / 1000) + margin)
end

-- settle is finish for a call that changed nothing of its own: it writes
-- only if leases expired, or to give a key found without a TTL one.
local function settle()
  if #expired > 0 or redis.call('PTTL', key) == -1 then
    finish()
  end
end

if op == 'a' then
  if held + cost > events then
    settle()
    return {0, math.max(0, events - held), period, period}
  end
  redis.call('ZADD', key, int(now + ttl), member)
  held = held + cost
  finish()
  return {1, events - held, 0, period}
elseif op == 'l' then
  local gone = redis.call('ZREM', key, member)
  if gone == 1 then
    held = math.max(0, held - leaseCost(member))
  end
  finish()
  return {gone, 0, 0, 0}
elseif op == 'n' then
  local s = redis.call('ZSCORE', key, member)
  if not s then
    settle()
    return {0, 0, 0, 0}
  end
  redis.call('ZADD', key, 'XX', int(math.max(tonumber(s), now + ttl)), member)
  finish()
  return {1, 0, 0, 0}
elseif op == 'r' then
  held = math.max(0, held - cost)
  finish()
  return {1, 0, 0, 0}
end
return redis.error_reply('floodgate: unknown operation ' .. op)
