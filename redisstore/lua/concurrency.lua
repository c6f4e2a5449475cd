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
--   given back, by every call before it does anything else. A lease
--   expires at most a lease TTL from now (a renewal's): one scored later
--   (the server's clock stepped back, or a corrupt set) is read as
--   expiring then, and written so, even by a call that changes nothing
--   else, so that no lease outlives its TTL and neither does the key. A
--   units count that is not a whole number from 0 is an error, never a
--   fresh quota (a lease's cost, the same).
-- ARGV[1]: 'a' to admit a lease, 'l' to release one, 'n' to renew one,
--   'r' to give units back without a lease (Refund); then, for a test
--   clock, a space and its seconds and nanoseconds (as in common.lua; in a
--   stack's layer, the stack's instant).
-- ARGV[2]: the cost, a whole number >= 1.
-- ARGV[3]: extra milliseconds of TTL past the last lease's expiry.
-- ARGV[4]: the most units in flight (Events); ARGV[5]: the Period in ns,
--   the RetryAfter of a refusal; ARGV[6]: the lease TTL in microseconds.
-- ARGV[7]: the lease's member ('' for 'r').
-- Reply: {allowed (0/1), remaining, retry after ns, reset after ns} for
-- 'a'; {1 if the lease was held and now is not, 0, 0, 0} for 'l'; {1 if
-- the lease is held and renewed, 0, 0, 0} for 'n' (an expired or released
-- lease is never brought back); {1, 0, 0, 0} for 'r'.

-- The call's state, set by the body: its arguments (below), now in
-- microseconds, fix (see below), db (the call's `redis`: a stack's layer
-- gets a recorder in its place), and what the body reads of the set
-- (described where the body sets them), for the helpers below.
local key, op, cost, margin, events, period, ttl, member, now, fix, db
local held, expired, top, latest, late

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

-- finish drops the expired leases, writes the units held back and sets the
-- key's TTL to the last lease's expiry plus the margin, the lease gone
-- (released) left out and a lease expiring at added (admitted or renewed)
-- counted; a key left with no lease is deleted. It writes through put:
-- redis.call, or fix for a call that changes nothing of its own.
local function finish(gone, added, put)
  if #expired > 0 then
    put('ZREMRANGEBYSCORE', key, '(0', int(now))
  end
  for _, m in ipairs(late) do
    put('ZADD', key, 'XX', int(latest), m)
  end
  local last = added or 0
  for i = #top - 1, 1, -2 do
    local s = math.min(tonumber(top[i + 1]), latest)
    if s <= now then
      break -- expired, and so is every lease below it ('#' included)
    end
    if top[i] ~= gone then
      last = math.max(last, s)
      break
    end
  end
  if last == 0 then
    put('DEL', key)
    return
  end
  if held > 0 then
    put('ZADD', key, int(-held), '#')
  else
    put('ZREM', key, '#')
  end
  put('PEXPIRE', key, math.ceil((last - now) / 1000) + margin)
end

-- settle is finish for a call that changed nothing of its own: it writes
-- only if leases expired or expire too late, or to give a key found
-- without a TTL one.
local function settle()
  if #expired > 0 or #late > 0 or db.call('PTTL', key) == -1 then
    finish(nil, nil, fix)
  end
end

-- live returns the expiry of member's lease (at most a lease TTL from
-- now), or nil if it is not held.
local function live(m)
  local s = tonumber(db.call('ZSCORE', key, m))
  if s and s > now then
    return math.min(s, latest)
  end
  return nil
end

-- CALL --
key, op, cost, margin = KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
events, period, ttl, member = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7]
if redis.R then
  now = redis.R * 1000000 + math.floor(redis.now / 1000)
elseif #op == 1 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  local s, n
  op, s, n = string.match(op, '^(%a) (%-?%d+) (%d+)$')
  now = tonumber(s) * 1000000 + math.floor(tonumber(n) / 1000)
end
-- fix is redis.call for writes that repair the set rather than change what
-- it holds (a lease expiring too late, a key without a TTL): a stack
-- (stack.lua) makes them even when it refuses.
fix = redis.fix or redis.call
db = redis

-- Every read of this script comes before its first write, so that a stack
-- (stack.lua), which holds its layers' writes until every layer admits,
-- runs it unchanged.
held = 0
local h = redis.call('ZSCORE', key, '#')
if h then
  held = -tonumber(h)
  if not (held > 0 and held < math.huge) or held ~= math.floor(held) then
    return redis.error_reply('floodgate: malformed units held at ' .. key .. ': ' .. h)
  end
end
expired = redis.call('ZRANGEBYSCORE', key, '(0', int(now))
for _, m in ipairs(expired) do
  held = held - leaseCost(m)
end
held = math.max(0, held)
-- The two leases that expire last (with '#' among them when fewer are
-- held): what the key's TTL follows once one of them is released.
top = redis.call('ZRANGE', key, -2, -1, 'WITHSCORES')
-- The leases expiring more than a lease TTL from now, read as expiring
-- then (latest is when) and written so by finish.
latest = now + ttl
late = {}
if #top > 0 and tonumber(top[#top]) > latest then
  late = redis.call('ZRANGEBYSCORE', key, '(' .. int(latest), '+inf')
end

if op == 'a' then
  if held + cost > events then
    settle()
    return {0, math.max(0, events - held), period, period}
  end
  held = held + cost
  finish(nil, now + ttl, redis.call)
  redis.call('ZADD', key, int(now + ttl), member)
  return {1, events - held, 0, period}
elseif op == 'l' then
  local gone = 0
  if live(member) then
    gone = 1
    held = math.max(0, held - leaseCost(member))
  end
  finish(member, nil, redis.call)
  redis.call('ZREM', key, member)
  return {gone, 0, 0, 0}
elseif op == 'n' then
  local s = live(member)
  if not s then
    settle()
    return {0, 0, 0, 0}
  end
  local e = math.max(s, now + ttl)
  finish(nil, e, redis.call)
  redis.call('ZADD', key, 'XX', int(e), member)
  return {1, 0, 0, 0}
elseif op == 'r' then
  held = math.max(0, held - cost)
  finish(nil, nil, redis.call)
  return {1, 0, 0, 0}
end
return redis.error_reply('floodgate: unknown operation ' .. op)
