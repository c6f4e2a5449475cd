-- Sliding-window counter, as core's slidingWindow: the state is the current
-- window's start and the counts of the window before it and of it, stored as
-- 'seconds nanoseconds previous current'. At t in window [w, w+P) the key
-- has used ceil(previous × (w+P−t) / P) + current. A start is never read
-- after now (common.lua): a later window's counts (the server's clock
-- stepped back) are read as the current window's, where core keeps the
-- later window in force.
-- ARGV[4]: the period in ns; ARGV[5]: the events per period.
-- The call's parameters, and w, the start of the window holding now, set
-- by the body.
local period, events, w

-- muldiv returns floor(a * b / m) and the remainder, for integers with
-- a < 2^31, b < 2^53 and m <= 2^52, where a * b itself may not be exact. The
-- quotient is exact whenever it is below 2^53; callers cap larger ones.
local function muldiv(a, b, m)
  if a * b < 9007199254740992 then
    -- The product is exact: divide it at once.
    return idiv(a * b, m)
  end
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

-- weighted is ceil(count × left / P).
local function weighted(count, left)
  local q, r = muldiv(count, left, period)
  if r ~= 0 then
    q = q + 1
  end
  return q
end

-- longestLeft is floor(room × P / count), at most P.
local function longestLeft(room, count)
  local q = muldiv(room, period, count)
  return math.min(q, period)
end

-- store writes the window with counts p and c through put (redis.call, or
-- fix for a refusal's repair), or deletes the key when nothing counts.
local function store(p, c, put)
  local reset = 0
  if c ~= 0 then
    reset = w + 2 * period - now
  elseif p ~= 0 then
    reset = w + period - now
  end
  if reset <= 0 then
    put('DEL', key)
    return
  end
  put('SET', key, stamp(w) .. string.format(' %.0f %.0f', p, c), 'PX', math.ceil(reset / 1e6) + margin)
end

-- CALL --
period, events = num(ARGV[4]), num(ARGV[5])
local state = redis.call('GET', key)

w = windowStart(period)
local prev, cur = 0, 0
if state then
  local s, n, p, c = string.match(state, '^(%-?%d+) (%d+) (%d+) (%d+)$')
  s, p, c = instant(s, n, 0), tonumber(p), tonumber(c)
  -- muldiv below needs counts below 2^31, as core's 32-bit halves hold.
  if s == nil or not (p < COUNT and c < COUNT) then
    return malformed(state)
  end
  -- A start not aligned to the period comes from another period (a
  -- Dynamic's key whose limit changed): the stored window counts as the
  -- window of this period that holds its start.
  if not s then
    -- Long past: nothing counts.
  elseif s >= w then
    prev, cur = p, c
  elseif s >= w - period then
    prev = c
  end
end
local at = math.max(now, w)

if op == 'r' then
  if cur > 0 then
    cur = math.max(0, cur - cost)
  elseif prev > 0 then
    prev = math.max(0, prev - cost)
  else
    return {0, 0, 0, 0}
  end
  store(prev, cur, redis.call)
  return {1, 0, 0, 0}
end

local left = w + period - at
local used = weighted(prev, left) + cur
if used + cost <= events then
  store(prev, cur + cost, redis.call)
  return {1, events - used - cost, 0, w + 2 * period - now}
end
local retryAt
if cur + cost <= events then
  retryAt = w + period - longestLeft(events - cur - cost, prev)
else
  retryAt = w + 2 * period - longestLeft(events - cost, cur)
end
local reset = 0
if cur > 0 then
  reset = w + 2 * period - now
elseif prev > 0 then
  reset = w + period - now
end
-- Refused: nothing to write, but a state read clamped is written back,
-- and a key found without a TTL, or with one ending before its quota is
-- whole (a Dynamic's key whose limit changed), gets one.
if clamped then
  store(prev, cur, fix)
else
  local ttl = reset > 0 and redis.call('PTTL', key)
  if ttl and (ttl == -1 or ttl < math.ceil(reset / 1e6)) then
    fix('PEXPIRE', key, math.ceil(reset / 1e6) + margin)
  end
end
return {0, math.max(0, events - used), retryAt - now, reset}
