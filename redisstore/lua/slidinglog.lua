-- Sliding log, as core's SlidingLog: the key is a sorted set of the
-- admissions still in the window, one member per instant (admissions at
-- one instant coalesced): score the instant's whole seconds, member
-- '<seconds> <nanoseconds, 9 digits>:<cost>' (unique: one per instant), so
-- that Redis's order (by score, then by member) is the order of the
-- instants. The member 'sum', scored
-- −(1 + the sum of the costs), comes first and keeps the sum without a
-- walk. At now the entries in (now−P, now] count. No entry is read after
-- now (common.lua): if the server's clock stepped back behind some (or the
-- set is corrupt), they are read as one entry at now holding their costs,
-- and written so (core reads the log at the newest entry instead).
-- ARGV[4]: the period in ns; ARGV[5]: the events per period.
-- The call's parameters and what the body reads of the log (described
-- where the body sets them), for the helpers below.
local period, events, sum, newest, newestCost, wipe, ahead, drop

local function malformed(what)
  return redis.error_reply('floodgate: malformed sliding log at ' .. key .. ': ' .. string.sub(tostring(what), 1, 64))
end

-- entry reads the member and score at reply position i of a
-- ZRANGE ... WITHSCORES: its instant here, its cost, or nil if it does
-- not parse.
local function entry(r, i)
  local m, n, c = string.match(r[i], '^(%d+) (%d%d%d%d%d%d%d%d%d):(%d+)$')
  local s = tonumber(r[i + 1])
  if not m or s ~= tonumber(m) then
    return nil
  end
  c = tonumber(c)
  if c < 1 or c >= COUNT then
    return nil
  end
  return (s - R) * 1e9 + tonumber(n), c
end

local function member(t, c)
  local q, r = idiv(t, 1e9)
  local s = string.format('%.0f', R + q)
  return s, string.format('%s %09d:%.0f', s, r, c)
end

-- prune removes what the reads above found gone, through put (redis.call,
-- or fix for a refusal's repair): the whole key, or its expired entries;
-- and writes the entries found after now as one at now, costing what
-- newestCost then says. It is the first write of every path below.
local function prune(put)
  if wipe then
    put('DEL', key)
  elseif drop > 0 then
    put('ZREMRANGEBYRANK', key, 1, drop)
  end
  if #ahead > 0 then
    for _, m in ipairs(ahead) do
      put('ZREM', key, m)
    end
    if newestCost > 0 then
      local s, m = member(now, newestCost)
      put('ZADD', key, s, m)
    end
  end
end

-- save writes the sum and the TTL through put: the key lives until its
-- newest entry leaves the window.
local function save(put)
  if sum == 0 then
    put('DEL', key)
    return
  end
  put('ZADD', key, -1 - sum, 'sum')
  put('PEXPIRE', key, math.ceil((newest + period - now) / 1e6) + margin)
end

-- CALL --
period, events = num(ARGV[4]), num(ARGV[5])

-- Every read of this script comes before its first write, so that a stack
-- (stack.lua), which holds its layers' writes until every layer admits,
-- runs it unchanged: the entries found expired are counted, and removed
-- only once the script knows what else to write.
sum = 0
newest, newestCost = nil, nil -- the newest entry's instant and cost, if any
wipe = false -- the key is deleted before anything is written
-- The members of the entries after now (and at now), which are read as
-- one at now costing newestCost: the top ranks of the set.
ahead = {}
local raw = redis.call('ZSCORE', key, 'sum')
if raw then
  sum = -tonumber(raw) - 1
  if not (sum >= 0 and sum < 9007199254740992) or sum ~= math.floor(sum) then
    return malformed('sum ' .. raw)
  end
  local r = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if r[1] ~= 'sum' then
    local s = tonumber(r[2])
    if not s then
      return malformed(r[1])
    end
    if s >= R - STALE then
      newest, newestCost = entry(r, 1)
      if not newest then
        return malformed(r[1])
      end
    end
    if newest and newest > now then
      local f = redis.call('ZRANGEBYSCORE', key, string.format('%.0f', R), '+inf', 'WITHSCORES')
      newest, newestCost, clamped = now, 0, true
      for i = 1, #f, 2 do
        local at, c = entry(f, i)
        if not at then
          return malformed(f[i])
        end
        if at >= now then
          ahead[#ahead + 1] = f[i]
          newestCost = newestCost + c
        end
      end
    end
  end
elseif redis.call('EXISTS', key) == 1 then
  return malformed('no sum')
end
local t = now

-- Count the entries that no longer count at t, oldest first: the first
-- drop entries (ranks 1 to drop; 'sum' is rank 0).
local cut = t - period
drop = 0
while sum > 0 do
  local r = redis.call('ZRANGE', key, 1 + drop, 16 + drop, 'WITHSCORES')
  if #r == 0 then
    return malformed('sum without entries')
  end
  local done = false
  for i = 1, #r, 2 do
    local s = tonumber(r[i + 1])
    local at, c
    if s and s < R - STALE then
      at, c = -math.huge, tonumber(string.match(r[i], ':(%d+)$'))
    else
      at, c = entry(r, i)
    end
    if not c then
      return malformed(r[i])
    end
    if at > cut then
      done = true
      break
    end
    drop = drop + 1
    sum = sum - c
  end
  if done then
    break
  end
end
if sum < 0 then
  return malformed('sum below its entries')
end
if sum == 0 then
  newest = nil
  wipe = wipe or drop > 0
end

if op == 'r' then
  if sum == 0 then
    prune(redis.call)
    return {0, 0, 0, 0}
  end
  -- Take cost back from the newest entries, never below empty: the
  -- newest whole entries taken are removed, the last one taken in part
  -- is written again with what is left of it. The entries after now, read
  -- as one at now, come first: prune writes what is left of them.
  local left, gone, part = cost, {}, nil
  if #ahead > 0 then
    local take = math.min(left, newestCost)
    left, sum, newestCost = left - take, sum - take, newestCost - take
  end
  local skip = #ahead
  while left > 0 and sum > 0 do
    local r = redis.call('ZRANGE', key, -1 - skip - #gone, -1 - skip - #gone, 'WITHSCORES')
    local at, c = entry(r, 1)
    if not at then
      return malformed(r[1])
    end
    local take = math.min(left, c)
    left, sum = left - take, sum - take
    if take < c then
      part = {r[1], at, c - take}
      newest = at
    else
      gone[#gone + 1] = r[1]
    end
  end
  if sum > 0 and not part and not (#ahead > 0 and newestCost > 0) then
    local r = redis.call('ZRANGE', key, -1 - skip - #gone, -1 - skip - #gone, 'WITHSCORES')
    newest = entry(r, 1)
    if not newest then
      return malformed(r[1])
    end
  end
  prune(redis.call)
  for _, m in ipairs(gone) do
    redis.call('ZREM', key, m)
  end
  if part then
    redis.call('ZREM', key, part[1])
    local s, m = member(part[2], part[3])
    redis.call('ZADD', key, s, m)
  end
  save(redis.call)
  return {1, 0, 0, 0}
end

if sum + cost <= events then
  prune(redis.call)
  if newest == t then
    local s, m = member(t, newestCost)
    redis.call('ZREM', key, m)
    cost = cost + newestCost
    sum = sum - newestCost
  end
  local s, m = member(t, cost)
  redis.call('ZADD', key, s, m)
  sum = sum + cost
  newest = t
  save(redis.call)
  return {1, events - sum, 0, t + period - now}
end

-- Refused: the oldest entries that count must leave until cost fits; the
-- last of them leaves one period after its instant.
local need, freed, from = sum + cost - events, 0, 1 + drop
local retryAt
while not retryAt do
  local r = redis.call('ZRANGE', key, from, from + 15, 'WITHSCORES')
  if #r == 0 then
    return malformed('sum beyond its entries')
  end
  for i = 1, #r, 2 do
    local at, c = entry(r, i)
    if not at then
      return malformed(r[i])
    end
    freed = freed + c
    if freed >= need then
      -- An entry after now counts as one at now.
      retryAt = math.min(at, now) + period
      break
    end
  end
  from = from + 16
end
if clamped then
  -- Entries after now are written at now, and the TTL with them.
  prune(fix)
  save(fix)
elseif drop > 0 then
  prune(redis.call)
  save(redis.call)
elseif redis.call('PTTL', key) == -1 then
  -- Nothing to write, but a key found without a TTL gets one.
  fix('PEXPIRE', key, math.ceil((newest + period - now) / 1e6) + margin)
end
return {0, events - sum, retryAt - now, newest + period - now}
