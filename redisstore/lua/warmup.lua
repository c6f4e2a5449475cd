-- Warm-up, as core's warmUp (Guava's SmoothWarmingUp in nanoseconds): the
-- state is the stored permits, a double, and the key's next free instant,
-- stored as 'permits seconds nanoseconds' with the permits printed in 17
-- significant digits, so that they read back as the same double. Lua's
-- numbers are the same IEEE doubles as Go's float64; every operation below
-- is done in the same order as in Go, each rounded on its own (core keeps
-- the compiler from fusing a multiply and an add), and Go's truncations to
-- whole nanoseconds are floors of values never negative, so the results
-- are bit for bit the same.
-- ARGV[4]: the stable interval (ns per permit); ARGV[5]: the threshold;
-- ARGV[6]: the most permits stored; ARGV[7]: the slope (ns per permit, per
-- permit above the threshold); ARGV[8]: the cool-down interval (ns per
-- permit stored while idle). All are computed in Go as core computes them.
-- ARGV[9]: the lead (common.lua): the longest wait of a cold request of
-- the whole burst, or for a Dynamic the longest span of any limit.
-- The call's parameters, set by the body.
local stable, threshold, full, slope, cool, lead

-- whole is core's idleAt: the first instant from which a key holding p
-- permits, next free at t, has cooled back to a full store.
local function whole(p, t)
  if p >= full then
    return t
  end
  local d = math.ceil((full - p) * cool)
  while p + d / cool < full do
    d = d + 1
  end
  return t + d
end

-- CALL --
stable, threshold, full = num(ARGV[4]), num(ARGV[5]), num(ARGV[6])
slope, cool, lead = num(ARGV[7]), num(ARGV[8]), num(ARGV[9])

local state = redis.call('GET', key)
local stored, nextFree = full, now
if state then
  local p, s, n = string.match(state, '^(%S+) (%-?%d+) (%d+)$')
  p = tonumber(p)
  -- Stored permits are never negative, infinite nor NaN. They may exceed
  -- full in a state kept across a limit change (a Dynamic's key), as in
  -- core, where only an admission caps them.
  if not p or not (p >= 0 and p < math.huge) then
    return malformed(state)
  end
  -- A next free instant more than STALE seconds ago is a key idle for
  -- longer than any warm-up period Redis accepts (at most a span): cooled
  -- to a full store, as a key never seen. One further ahead than the lead
  -- is read at the lead (common.lua).
  local x = instant(s, n, lead)
  if x == nil then
    return malformed(state)
  elseif x then
    stored, nextFree = p, x
  end
end

if op == 'r' then
  -- The next free instant moves back by cost permits at the stable rate,
  -- never before now; the stored permits stay.
  if not state or nextFree <= now then
    return {0, 0, 0, 0}
  end
  nextFree = math.max(now, nextFree - math.floor(cost * stable))
  local reset = whole(stored, nextFree) - now
  redis.call('SET', key, string.format('%.17g ', stored) .. stamp(nextFree), 'PX', math.ceil(reset / 1e6) + margin)
  return {1, 0, 0, reset}
end

if nextFree > now then
  local reset = whole(stored, nextFree) - now
  -- Refused: nothing to write, but a state read clamped is written back,
  -- and a key found without a TTL, or with one ending before its quota is
  -- whole (a Dynamic's key whose limit changed), gets one.
  if clamped then
    fix('SET', key, string.format('%.17g ', stored) .. stamp(nextFree), 'PX', math.ceil(reset / 1e6) + margin)
  else
    local ttl = redis.call('PTTL', key)
    if ttl == -1 or ttl < math.ceil(reset / 1e6) then
      fix('PEXPIRE', key, math.ceil(reset / 1e6) + margin)
    end
  end
  return {0, 0, nextFree - now, reset}
end
stored = math.min(full, stored)
if now > nextFree then
  stored = math.min(full, stored + (now - nextFree) / cool)
  nextFree = now
end
local spend = math.min(cost, stored)
-- Guava's storedPermitsToWaitTime for spend of the stored permits: the
-- part above the threshold as the trapezoid under the slope, the rest at
-- the stable rate; then the permits not stored, at the stable rate.
local d, n = 0, spend
local above = stored - threshold
if above > 0 then
  local take = math.min(above, n)
  local length = (stable + above * slope) + (stable + (above - take) * slope)
  d = math.floor(take * length / 2)
  n = n - take
end
nextFree = nextFree + ((d + math.floor(stable * n)) + math.floor((cost - spend) * stable))
stored = stored - spend
local reset = whole(stored, nextFree) - now
local left = 0
if nextFree <= now then
  left = 1
end
redis.call('SET', key, string.format('%.17g ', stored) .. stamp(nextFree), 'PX', math.ceil(reset / 1e6) + margin)
return {1, left, 0, reset}
