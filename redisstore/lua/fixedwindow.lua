-- Fixed window, as core's fixedWindow: the state is the window's start and
-- its count, stored as 'seconds nanoseconds count'. A state from a later
-- window (the clock stepped back) stays in force.
-- ARGV[6]: the period in ns; ARGV[7]: the events per window.
local period, events = tonumber(ARGV[6]), tonumber(ARGV[7])

local w = windowStart(period)
local start, count = w, 0
local f = fields(3)
if f and f.err then
  return f
end
if f then
  local s = rel(f[1], f[2])
  if s and s >= w then
    start, count = s, f[3]
  end
end
local finish = start + period

if op == 'r' then
  if not f or count == 0 then
    return {0, 0, 0, 0}
  end
  count = math.max(0, count - cost)
  save(abs(start) .. ' ' .. count, finish - now)
  return {1, 0, 0, finish - now}
end

if count + cost <= events then
  save(abs(start) .. string.format(' %.0f', count + cost), finish - now)
  return {1, events - count - cost, 0, finish - now}
end
repair(finish - now)
return {0, events - count, finish - now, finish - now}
