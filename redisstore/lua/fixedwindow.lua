-- Fixed window, as core's fixedWindow: the state is the window's start and
-- its count, stored as 'seconds nanoseconds count'. A start is never read
-- after now (common.lua): a state from a later window (the server's clock
-- stepped back) is read as the current window's, its count kept, where
-- core keeps the later window in force. A count kept across a limit
-- change may exceed events: nothing is left then.
-- ARGV[4]: the period in ns; ARGV[5]: the events per window; ARGV[6] and
-- ARGV[7], for a refund, optional: the server's instant of a lease's grant
-- in seconds and ns (the grant's reply), so that the lease's return
-- refunds nothing once the window it was granted in has ended.
local period, events = nums[ARGV[4]] or num(ARGV[4]), nums[ARGV[5]] or num(ARGV[5])
local state = redis.call('GET', key)

-- A period longer than LONG (windows.lua) is whole seconds: ws is then the
-- window's start in seconds since the epoch, and the stored start is
-- compared in seconds (it is after ws's second exactly when its seconds
-- are), with no STALE bound (a start a year back is this window's).
local w, ws
if period <= LONG then
  w = windowStart(period)
else
  ws, w = longStart(period)
end
local count = 0
if state then
  local s, n, c = string.match(state, '^(%-?%d+) (%d+) (%d+)$')
  if ws then
    s, n, c = tonumber(s), tonumber(n), tonumber(c)
    if not s or not n or n >= 1e9 or not (c < COUNT) then
      return malformed(state)
    end
    if s > R or s == R and n > now then
      -- After now: read at now, as instant reads it.
      clamped, count = true, c
    elseif s >= ws then
      count = c
    end
  else
    s, c = instant(s, n, 0), tonumber(c)
    if s == nil or not (c < COUNT) then
      return malformed(state)
    end
    -- A start inside the current window but not at its start comes from
    -- another period (a Dynamic's key whose limit changed): its count is
    -- the current window's.
    if s and s >= w then
      count = c
    end
  end
end
local start = w
local reset
if ws then
  -- In whole microseconds, rounded up: the window's end is whole seconds
  -- from R, now is in ns, and a multiple of 1000 below 2^56 is exact. The
  -- server's clock counts microseconds, so only a test clock's ns round.
  reset = ((ws - R) * 1e6 + period / 1e3 - floor(now / 1e3)) * 1e3
else
  reset = start + period - now
end

-- A grant charges what fits now, up to the cost asked; 'f' (a stack's
-- grant, stack.lua) only says what fits, and when the window ends.
local grant = op == 'g'
if op == 'f' then
  return {math.max(0, events - count), reset}
end
if grant then
  cost, op = math.max(1, math.min(cost, events - count)), 'a'
end

if op == 'r' then
  local gs, gn = tonumber(ARGV[6]), tonumber(ARGV[7])
  if count == 0 or (gs and gn and (ws and gs < ws or not ws and (gs - R) * 1e9 + gn < start)) then
    return {0, 0, 0, 0}
  end
  count = math.max(0, count - cost)
elseif count + cost <= events then
  count = count + cost
else
  -- Refused: nothing to write, but a state read clamped is written back,
  -- and a key found without a TTL, or with one ending before its quota is
  -- whole (a Dynamic's key whose limit changed), gets one.
  if clamped then
    fix('SET', key, stamp(start) .. format(' %d', count), 'PX', math.ceil(reset / 1e6) + margin)
  else
    local ttl = redis.call('PTTL', key)
    if ttl == -1 or ttl < math.ceil(reset / 1e6) then
      fix('PEXPIRE', key, math.ceil(reset / 1e6) + margin)
    end
  end
  if grant then
    return {0, math.max(0, events - count), reset, reset, 0, 0, R, now, holders(), reset}
  end
  return {0, math.max(0, events - count), reset, reset}
end
redis.call('SET', key, stamp(start) .. format(' %d', count), 'PX', format('%d', ceil(reset / 1e6) + margin))
if op == 'r' then
  return {1, 0, 0, reset}
end
if grant then
  return {1, events - count, 0, reset, 0, cost, R, now, holders(), reset}
end
return {1, events - count, 0, reset}
