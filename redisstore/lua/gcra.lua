-- GCRA, as core's gcra: the state is the theoretical arrival time (tat), the
-- instant the key's quota is whole again, stored as 'seconds nanoseconds'.
-- ARGV[6]: the interval in ns; ARGV[7]: the span (burst × interval) in ns.
local interval, span = tonumber(ARGV[6]), tonumber(ARGV[7])

local tat = now
local f = fields(2)
if f and f.err then
  return f
end
if f then
  tat = rel(f[1], f[2]) or now
end

if op == 'r' then
  if tat <= now then
    return {0, 0, 0, 0}
  end
  tat = math.max(now, tat - cost * interval)
  save(abs(tat), tat - now)
  return {1, 0, 0, tat - now}
end

tat = math.max(tat, now)
local nxt = tat + cost * interval
if nxt - now <= span then
  save(abs(nxt), nxt - now)
  local left = idiv(span - (nxt - now), interval)
  return {1, left, 0, nxt - now}
end
repair(tat - now)
local left = idiv(math.max(0, span - (tat - now)), interval)
return {0, left, nxt - now - span, tat - now}
