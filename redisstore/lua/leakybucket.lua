-- Leaky bucket, a shaper, as core's leakyBucket: the state is the instant
-- the key's line drains, when the next request's turn comes, stored as
-- 'seconds nanoseconds'. A request waits for its turn and then holds the
-- line for cost intervals; one whose turn is more than the longest wait
-- away is refused. An admission's reply carries its wait, the Delay, where
-- a refusal's carries its RetryAfter.
-- ARGV[4]: the interval in ns; ARGV[5]: the longest wait in ns; ARGV[6]:
-- the lead (common.lua): the line drains at most the longest wait plus
-- Burst × interval after now (checked in Go to fit in a span); for a
-- Dynamic, the longest span of any limit.
local interval, maxDelay, lead = num(ARGV[4]), num(ARGV[5]), num(ARGV[6])

local state = redis.call('GET', key)
local line = now
if state then
  local s, n = string.match(state, '^(%-?%d+) (%d+)$')
  local x = instant(s, n, lead)
  if x == nil then
    return malformed(state)
  elseif x then
    line = x
  end
end

local t -- the new drain instant
if op == 'r' then
  -- A turn given back: the line drains cost intervals sooner, never
  -- before now.
  if line <= now then
    return {0, 0, 0, 0}
  end
  t = math.max(now, line - cost * interval)
  redis.call('SET', key, stamp(t), 'PX', math.ceil((t - now) / 1e6) + margin)
  return {1, 0, 0, t - now}
end
local start = math.max(line, now)
local delay = start - now
if delay > maxDelay then
  -- Refused: nothing to write, but a state read clamped is written back,
  -- and a key found without a TTL gets one.
  if clamped then
    fix('SET', key, stamp(line), 'PX', math.ceil(delay / 1e6) + margin)
  elseif redis.call('PTTL', key) == -1 then
    fix('PEXPIRE', key, math.ceil(delay / 1e6) + margin)
  end
  return {0, 0, delay - maxDelay, delay}
end
t = start + cost * interval
-- Remaining: the cost-1 requests whose turn would come within the longest
-- wait.
local left = 0
if t - now <= maxDelay then
  left = idiv(maxDelay - (t - now), interval) + 1
end
redis.call('SET', key, stamp(t), 'PX', math.ceil((t - now) / 1e6) + margin)
return {1, left, delay, t - now}
