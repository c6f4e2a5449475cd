-- Sub-windows, as core's SlidingWindow with WithSubWindows: sub-windows of
-- period/n aligned to the epoch; at t, the start of the sub-window holding
-- now, the sub-windows starting in (t−P, t] count. The newest is never read
-- after t (common.lua): if the server's clock stepped back behind it, the
-- list is read as ending at t, every cost kept (core reads the list at the
-- newest instead). The state lists the non-empty
-- ones: 'seconds nanoseconds' of the newest, then ' k:cost' for each,
-- oldest first, k being how many sub-windows before the newest it starts
-- (the newest: 0).
-- ARGV[4]: the period in ns; ARGV[5]: the events per period; ARGV[6]: the
-- sub-window's length in ns.
-- The call's parameters, and the sub-windows that count at the start of
-- the one holding now, oldest first (starts and costs), set by the body.
local period, events, size, starts, costs

-- store writes the sub-windows through put (redis.call, or fix for a
-- refusal's repair), or deletes the key when none is left; the key lives
-- until the newest leaves the count.
local function store(put)
  local m = #starts
  if m == 0 then
    put('DEL', key)
    return
  end
  local top = starts[m]
  local parts = {stamp(top)}
  for i = 1, m do
    parts[#parts + 1] = string.format('%.0f:%.0f', (top - starts[i]) / size, costs[i])
  end
  put('SET', key, table.concat(parts, ' '), 'PX', math.ceil((top + period - now) / 1e6) + margin)
end

-- CALL --
period, events, size = num(ARGV[4]), num(ARGV[5]), num(ARGV[6])
local state = redis.call('GET', key)

local t = windowStart(size)
starts, costs = {}, {}
local sum = 0
if state then
  local s, n, rest = string.match(state, '^(%-?%d+) (%d+)(.*)$')
  if not s then
    return malformed(state)
  end
  local list = {}
  local pos, last = 1, nil
  while pos <= #rest do
    local a, b, k, c = string.find(rest, '^ (%d+):(%d+)', pos)
    if not a then
      return malformed(state)
    end
    k, c = tonumber(k), tonumber(c)
    if c < 1 or c >= COUNT or (last and k >= last) then
      return malformed(state)
    end
    last = k
    list[#list + 1] = {k, c}
    pos = b + 1
  end
  if last ~= 0 then
    return malformed(state)
  end
  local top = instant(s, n, 0)
  if top == nil then
    return malformed(state)
  end
  if top and top > t then
    top, clamped = t, true
  end
  if top then
    for _, e in ipairs(list) do
      local at = top - e[1] * size
      -- Only those that still count at t.
      if at > t - period then
        starts[#starts + 1] = at
        costs[#costs + 1] = e[2]
        sum = sum + e[2]
      end
    end
  end
end

if op == 'r' then
  if sum == 0 then
    return {0, 0, 0, 0}
  end
  local left = cost
  while left > 0 and #starts > 0 do
    local m = #starts
    local take = math.min(left, costs[m])
    left, costs[m] = left - take, costs[m] - take
    if costs[m] == 0 then
      starts[m], costs[m] = nil, nil
    end
  end
  store(redis.call)
  return {1, 0, 0, 0}
end

if sum + cost <= events then
  local m = #starts
  if m > 0 and starts[m] == t then
    costs[m] = costs[m] + cost
  else
    starts[m + 1], costs[m + 1] = t, cost
  end
  store(redis.call)
  return {1, events - sum - cost, 0, t + period - now}
end

-- Refused: the oldest sub-windows must leave until cost fits; the last of
-- them leaves one period after its start.
local need, freed, i = sum + cost - events, 0, 0
repeat
  i = i + 1
  freed = freed + costs[i]
until freed >= need
local reset = starts[#starts] + period - now
-- Nothing to write, but a state read clamped is written back, and a key
-- found without a TTL gets one.
if clamped then
  store(fix)
elseif redis.call('PTTL', key) == -1 then
  fix('PEXPIRE', key, math.ceil(reset / 1e6) + margin)
end
return {0, events - sum, starts[i] + period - now, reset}
