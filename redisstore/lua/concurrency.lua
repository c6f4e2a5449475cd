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

-- Every read of this script comes before its first write, so that a stack
-- (stack.lua), which holds its layers' writes until every layer admits,
-- runs it unchanged.
local held = 0
local h = redis.call('ZSCORE', key, '#')
if h then
  held = -tonumber(h)
end
local expired = redis.call('ZRANGEBYSCORE', key, '(0', int(now))
for _, m in ipairs(expired) do
  held = held - leaseCost(m)
end
held = math.max(0, held)
-- The two leases that expire last (with '#' among them when fewer are
-- held): what the key's TTL follows once one of them is released.
local top = redis.call('ZRANGE', key, -2, -1, 'WITHSCORES')

-- finish drops the expired leases, writes the units held back and sets the
-- key's TTL to the last lease's expiry plus the margin, the lease gone
-- (released) left out and a lease expiring at added (admitted or renewed)
-- counted; a key left with no lease is deleted.
local function finish(gone, added)
  if #expired > 0 then
    redis.call('ZREMRANGEBYSCORE', key, '(0', int(now))
  end
  local last = added or 0
  for i = #top - 1, 1, -2 do
    local s = tonumber(top[i + 1])
    if s <= now then
      break -- expired, and so is every lease below it ('#' included)
    end
    if top[i] ~= gone then
      last = math.max(last, s)
      break
    end
  end
  if last == 0 then
    redis.call('DEL', key)
    return
  end
  if held > 0 then
    redis.call('ZADD', key, int(-held), '#')
  else
    redis.call('ZREM', key, '#')
  end
  redis.call('PEXPIRE', key, math.ceil((last - now) / 1000) + margin)
end

-- settle is finish for a call that changed nothing of its own: it writes
-- only if leases expired, or to give a key found without a TTL one.
local function settle()
  if #expired > 0 or redis.call('PTTL', key) == -1 then
    finish(nil, nil)
  end
end

-- live returns the expiry of member's lease, or nil if it is not held.
local function live(m)
  local s = tonumber(redis.call('ZSCORE', key, m))
  if s and s > now then
    return s
  end
  return nil
end

if op == 'a' then
  if held + cost > events then
    settle()
    return {0, math.max(0, events - held), period, period}
  end
  held = held + cost
  finish(nil, now + ttl)
  redis.call('ZADD', key, int(now + ttl), member)
  return {1, events - held, 0, period}
elseif op == 'l' then
  local gone = 0
  if live(member) then
    gone = 1
    held = math.max(0, held - leaseCost(member))
  end
  finish(member, nil)
  redis.call('ZREM', key, member)
  return {gone, 0, 0, 0}
elseif op == 'n' then
  local s = live(member)
  if not s then
    settle()
    return {0, 0, 0, 0}
  end
  local e = math.max(s, now + ttl)
  finish(nil, e)
  redis.call('ZADD', key, 'XX', int(e), member)
  return {1, 0, 0, 0}
elseif op == 'r' then
  held = math.max(0, held - cost)
  finish(nil, nil)
  return {1, 0, 0, 0}
end
return redis.error_reply('floodgate: unknown operation ' .. op)
