-- Several keys, each under one or more limits of any algorithm a stack
-- takes (but concurrency and the leaky bucket), decided all or nothing in
-- one script (multi.go). Go builds the script: stack.lua's part before
-- '-- LAYERS --' (its recorder and combine), then one function per
-- algorithm in algs, named by its files (fnID in functions.go) and holding
-- that algorithm's whole script, then this file's body. Every layer runs
-- against the recorder: its writes are made only when every layer of every
-- item admits (for a refund, always), and a key decided twice in one call
-- is read as the items before left it (stack.lua), an item that refused
-- leaving nothing (forget), as its own limiter would. In a Functions
-- library (multiLibrary) the algorithms are sections, made once, and the
-- body is the registered function.
--
-- KEYS[k]: the state key of the k-th layer, items' layers in order.
-- ARGV[1]: 'a' to charge, 'r' to refund; a test clock follows it ('a S N',
--   as in common.lua), else the server's TIME is read once, so that every
--   layer decides at one instant (handed to the layers on the recorder).
-- ARGV[2]: the TTL margin in ms, as ARGV[3] of one algorithm.
-- Then, for each item: its cost, its number of layers, and for each layer
--   its algorithm (a key of algs), the number of its parameters, then them
--   (ARGV[4...] of the algorithm).
-- Reply: for 'a', five numbers per item, as a stack's reply (combine):
--   allowed, remaining, retry after (or delay) ns, reset after ns, the
--   index from 0 of the layer named; an item is charged only if every
--   item is allowed. For 'r', nothing.
--
-- A call whose every layer is a plain fixed window (the service's calls)
-- is sent with the op 'A' (charge) or 'R' (refund) and, for each layer,
-- only its period in ns and its events: fixedWindows decides it here,
-- reading and writing each key as fixedwindow.lua would under the
-- recorder, with none of a generic layer's work (its arguments copied,
-- the recorder's calls, common.lua's body): most of a call's cost on the
-- server is the Lua interpreter's, not Redis's commands. So Go sends
-- this file after common.lua's and windows.lua's heads.

-- fwLayer decides one fixed-window layer on k, its writes held in
-- fwHeld as the recorder holds them, and read again from seen and fwTTL
-- (their values and TTLs in ms) when the call decides k again: a refund
-- if refund, else a charge of c. It answers fixedwindow.lua's four
-- numbers for a charge, nothing for a refund, or the error of a
-- malformed state. Each table, number read and string made costs the
-- server: states are made with one format, TTLs kept as numbers.
local fwHeld, fwTTL
local function fwLayer(k, period, events, c, refund, margin)
  key, clamped = k, false
  local state = seen[k]
  if state == nil then
    state = real.call('GET', k)
  end
  local start, ws
  if period <= LONG then
    start = windowStart(period)
  else
    ws, start = longStart(period)
  end
  local count = 0
  if state then
    local s, n, x = string.match(state, '^(%-?%d+) (%d+) (%d+)$')
    if ws then
      s, n, x = tonumber(s), tonumber(n), tonumber(x)
      if not s or not n or n >= 1e9 or not (x < COUNT) then
        return malformed(state)
      end
      if s > R or s == R and n > now then
        clamped, count = true, x
      elseif s >= ws then
        count = x
      end
    else
      s, x = instant(s, n, 0), tonumber(x)
      if s == nil or not (x < COUNT) then
        return malformed(state)
      end
      if s and s >= start then
        count = x
      end
    end
  end
  local reset
  if ws then
    reset = ((ws - R) * 1e6 + period / 1e3 - floor(now / 1e3)) * 1e3
  else
    reset = start + period - now
  end
  local ms = ceil(reset / 1e6)
  if refund then
    if count == 0 then
      return nil
    end
    count = max(0, count - c)
  elseif count + c <= events then
    count = count + c
  else
    if clamped then
      real.call('SET', k, stamp(start) .. format(' %d', count), 'PX', ms + margin)
    else
      local ttl = fwTTL[k]
      if ttl == nil then
        ttl = real.call('PTTL', k)
      end
      if ttl == -1 or ttl < ms then
        real.call('PEXPIRE', k, ms + margin)
      end
    end
    return {0, max(0, events - count), reset, reset}
  end
  local v
  if start >= 0 and start < 1e9 then
    v = format('%d %d %d', R, start, count)
  else
    local q, r = idiv(start, 1e9)
    v = format('%d %d %d', R + q, r, count)
  end
  local h = #fwHeld
  fwHeld[h + 1], fwHeld[h + 2], fwHeld[h + 3] = k, v, format('%d', ms + margin)
  seen[k], fwTTL[k] = v, ms + margin
  if refund then
    return nil
  end
  return {1, events - count, 0, reset}
end

-- fwForget is forget (stack.lua) for the short form's writes.
local function fwForget(mark)
  for i = #fwHeld, mark + 1, -1 do
    fwHeld[i] = nil
  end
  seen, fwTTL = {}, {}
  for i = 1, mark, 3 do
    seen[fwHeld[i]], fwTTL[fwHeld[i]] = fwHeld[i + 1], tonumber(fwHeld[i + 2])
  end
end

-- fixedWindows decides a call of fixed windows only ('A' or 'R', see
-- above) on its KEYS and ARGV, all or nothing, as the generic loop below
-- would.
local function fixedWindows(KEYS, ARGV, refund)
  if not floor then
    floor, ceil, min, max, format = math.floor, math.ceil, math.min, math.max, string.format
  end
  R, now = recorder.R, recorder.now
  fwHeld, fwTTL = held, {}
  local margin = nums[ARGV[2]] or num(ARGV[2])
  local out, o, allowed = {}, 0, true
  local at, k, nargs = 3, 1, #ARGV
  while at <= nargs do
    local c, n = nums[ARGV[at]] or num(ARGV[at]), nums[ARGV[at + 1]] or num(ARGV[at + 1])
    at = at + 2
    local d, replies, mark = nil, nil, #fwHeld
    for i = 1, n do
      local r = fwLayer(KEYS[k], nums[ARGV[at]] or num(ARGV[at]), nums[ARGV[at + 1]] or num(ARGV[at + 1]), c, refund, margin)
      at, k = at + 2, k + 1
      if r and r.err then
        return r
      end
      if n == 1 then
        d = r
      elseif not refund then
        replies = replies or {}
        replies[i] = r
      end
    end
    if not refund then
      local layer = 0
      if n > 1 then
        d = combine(replies, n)
        layer = d[5]
      end
      if d[1] ~= 1 then
        allowed = false
        fwForget(mark)
      end
      out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5] = d[1], d[2], d[3], d[4], layer
      o = o + 5
    end
  end
  if allowed or refund then
    for i = 1, #fwHeld, 3 do
      real.call('SET', fwHeld[i], fwHeld[i + 1], 'PX', fwHeld[i + 2])
    end
  end
  return out
end

-- CALL --
local op, margin = begin(redis, ARGV[1]), ARGV[2]
if op == 'A' or op == 'R' then
  return fixedWindows(KEYS, ARGV, op == 'R')
end

local out, allowed = {}, true
local at, k = 3, 1
-- One KEYS and one ARGV table serve every layer in turn: a layer reads
-- them only while it runs. wide is how many parameters args holds.
local keys, args, wide = {}, {op, 0, margin}, 0
while at <= #ARGV do
  local n = tonumber(ARGV[at + 1])
  args[2] = ARGV[at]
  at = at + 2
  local replies, d, mark = {}, nil, #held
  for i = 1, n do
    local run, c = algs[ARGV[at]], tonumber(ARGV[at + 1])
    if not run then
      return real.error_reply('floodgate: no algorithm ' .. tostring(ARGV[at]))
    end
    for j = 1, c do
      args[3 + j] = ARGV[at + 1 + j]
    end
    for j = c + 1, wide do
      args[3 + j] = nil
    end
    wide = c
    at = at + 2 + c
    keys[1] = KEYS[k]
    local r = run(keys, args, recorder)
    k = k + 1
    if r.err then
      return r
    end
    replies[i] = r
  end
  if op == 'a' then
    if n == 1 then
      d = replies[1]
      d[5] = 0
    else
      d = combine(replies, n)
    end
    if d[1] ~= 1 then
      allowed = false
      forget(mark)
    end
    for j = 1, 5 do
      out[#out + 1] = d[j]
    end
  end
end

if allowed or op ~= 'a' then
  for _, w in ipairs(held) do
    real.call(unpack(w))
  end
end
return out
