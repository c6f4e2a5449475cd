-- A stack: several limits on one key, each with its own algorithm, decided
-- all or nothing in one script. Go builds the script: this file's head,
-- then one function per layer holding that algorithm's whole script
-- (prelude included), then this file's tail. Every layer runs against a
-- recorder in place of `redis`: reads and the removal of expired entries
-- go to the server at once, writes are held, and are made only when every
-- layer admits (or, for a refund, always). So a layer's script must not
-- read back its own writes nor use a write's reply, which none does.
--
-- KEYS[i]: layer i's state key; every key holds the same hash tag.
-- ARGV[1..5]: as for one algorithm (op, cost, clock, TTL margin), except
--   that the clock is always given: read once here from TIME when the
--   caller leaves it empty, so that every layer decides at one instant.
-- ARGV[6...]: for each layer, the number of its parameters, then them.
-- Reply: {allowed, remaining, retry after (or delay) ns, reset after ns,
--   the index from 0 of the layer the decision names}.

local real = redis
local held = {}
local writes = {SET = true, PEXPIRE = true, DEL = true, ZADD = true, ZREM = true,
  HSET = true, EXPIRE = true, PSETEX = true, INCRBY = true, HINCRBY = true}
local recorder = {
  error_reply = real.error_reply,
  status_reply = real.status_reply,
  call = function(cmd, ...)
    if writes[string.upper(cmd)] then
      held[#held + 1] = {cmd, ...}
      return true
    end
    return real.call(cmd, ...)
  end,
}

local clockS, clockNs = ARGV[3], ARGV[4]
if clockS == '' then
  local t = real.call('TIME')
  clockS, clockNs = t[1], string.format('%.0f', tonumber(t[2]) * 1000)
end

local layers = {}
-- LAYERS --

local n = #KEYS
local replies = {}
local allowed = true
local at = 6
for i = 1, n do
  local c = tonumber(ARGV[at])
  local args = {ARGV[1], ARGV[2], clockS, clockNs, ARGV[5]}
  for j = 1, c do
    args[5 + j] = ARGV[at + j]
  end
  at = at + c + 1
  local r = layers[i]({KEYS[i]}, args, recorder)
  if r.err then
    return r
  end
  replies[i] = r
  if r[1] ~= 1 then
    allowed = false
  end
end

local op = ARGV[1]
if allowed or op == 'r' then
  for _, w in ipairs(held) do
    real.call(unpack(w))
  end
end
if op == 'r' then
  return {1, 0, 0, 0, 0}
end

-- As core's Stack: an admission names the layer with the least left and
-- waits for the longest delay; a denial names the layer with the longest
-- wait, and what is left is the least any denying layer has.
local pick = 1
if allowed then
  local delay = 0
  for i = 1, n do
    if replies[i][2] < replies[pick][2] then
      pick = i
    end
    delay = math.max(delay, replies[i][3])
  end
  return {1, replies[pick][2], delay, replies[pick][4], pick - 1}
end
local left
pick = nil
for i = 1, n do
  local r = replies[i]
  if r[1] ~= 1 then
    if pick == nil or r[3] > replies[pick][3] then
      pick = i
    end
    if left == nil or r[2] < left then
      left = r[2]
    end
  end
end
return {0, left, replies[pick][3], replies[pick][4], pick - 1}
