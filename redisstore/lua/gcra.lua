-- GCRA, as core's gcra: the state is the theoretical arrival time (tat), the
-- instant the key's quota is whole again, stored as 'seconds nanoseconds'.
-- ARGV[4]: the interval in ns; ARGV[5]: the span (burst × interval) in ns;
-- ARGV[6]: the lead (common.lua): the span, or for a Dynamic the longest
-- span of any limit.
local interval, span = nums[ARGV[4]] or num(ARGV[4]), nums[ARGV[5]] or num(ARGV[5])
local lead = nums[ARGV[6]] or num(ARGV[6])
local state = redis.call('GET', key)

local tat = now
if state then
  local s, n = string.match(state, '^(%-?%d+) (%d+)$')
  local x = instant(s, n, lead)
  if x == nil then
    return malformed(state)
  elseif x then
    tat = x
  end
end

-- A grant charges what fits now, up to the cost asked; 'f' (a stack's
-- grant, stack.lua) only says what fits, and that no window ends a lease.
-- A grant ahead (common.lua) that finds nothing fits now may take the
-- tat up to room ahead of now: the span, and the units due within ahead,
-- as far as the lead lets it be read back (a Limiter's with local quota
-- is the span and a lease).
local grant, room = op == 'g', span
if grant or op == 'f' then
  local fit = idiv(max(0, span - (max(tat, now) - now)), interval)
  if fit == 0 and ahead > 0 and lead > span then
    room = span + min(ahead, lead - span)
    fit = idiv(max(0, room - (max(tat, now) - now)), interval)
  end
  if op == 'f' then
    return {fit, -1}
  end
  cost, op = max(1, min(cost, fit)), 'a'
end

local t -- the new tat
if op == 'r' then
  if tat <= now then
    return {0, 0, 0, 0}
  end
  t = max(now, tat - cost * interval)
else
  tat = max(tat, now)
  t = tat + cost * interval
  if t - now > room then
    -- Refused: nothing to write, but a state read clamped is written back,
    -- and a key found without a TTL, or with one ending before its quota
    -- is whole (a Dynamic's key whose limit changed), gets one.
    if clamped then
      fix('SET', key, stamp(tat), 'PX', ceil((tat - now) / 1e6) + margin)
    else
      local ttl = tat > now and redis.call('PTTL', key)
      if ttl and (ttl == -1 or ttl < ceil((tat - now) / 1e6)) then
        fix('PEXPIRE', key, ceil((tat - now) / 1e6) + margin)
      end
    end
    local r = {0, idiv(max(0, span - (tat - now)), interval), t - now - span, tat - now}
    if grant then
      r[5], r[6], r[7], r[8], r[9], r[10] = 0, 0, R, now, holders(), -1
    end
    return r
  end
end
-- The TTL as text: Redis would print a number with '%.17g'.
redis.call('SET', key, stamp(t), 'PX', format('%d', ceil((t - now) / 1e6) + margin))
if op == 'r' then
  return {1, 0, 0, t - now}
end
if grant then
  -- Past the span, the last unit charged is due in t - now - span.
  return {1, max(0, idiv(span - (t - now), interval)), max(0, t - now - span), t - now, 0, cost, R, now, holders(), -1}
end
return {1, idiv(span - (t - now), interval), 0, t - now}
