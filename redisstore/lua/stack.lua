-- A stack: several limits on one key, each with its own algorithm, decided
-- all or nothing in one script. Go builds the script: this file's head,
-- then one function per layer holding that algorithm's whole script
-- (prelude included), then this file's tail. Every layer runs against a
-- recorder in place of `redis`: reads go to the server at once, writes are
-- held, and are made only when every layer admits (for the other
-- operations, always). So a layer's script must make every read before its
-- first write, which each does. A layer's repairs (redis.fix: a state read
-- clamped written back, a missing TTL set; see common.lua) charge nothing
-- and are made at once, even when the stack refuses. In a Functions
-- library (stackLibrary in functions.go) each distinct layer's files are a
-- section of the library, their heads run once, and the layers are those
-- sections' functions; this file's part before '-- LAYERS --' runs once
-- too, and its tail, from '-- CALL --', is the registered function.
--
-- KEYS[i]: layer i's state key; every key holds the same hash tag.
-- ARGV[1..3]: as for one algorithm (op and test clock, cost, TTL
--   margin), except that every layer decides at one instant: the test
--   clock's, or the server's TIME read once here, which the layers read
--   from the recorder (its R and now, as common.lua names them). The op
--   may also be a concurrency limit's 'l' (release a lease) or 'n' (renew
--   one), which only the concurrency layers see.
-- ARGV[4...]: for each layer, the number of its parameters, then them;
--   then, when a layer is a concurrency limit, the admission's lease
--   member, passed to every concurrency layer after its parameters.
-- Reply: {allowed, remaining, retry after (or delay) ns, reset after ns,
--   the index from 0 of the layer the decision names}; for 'l' and 'n',
--   allowed is 1 if any concurrency layer held (or renewed) the lease.
--
-- Local quota (quota.go; quota is set before this file by Go): the last
-- key lists the instances holding a lease (quota.lua), and the op may be
-- 'g', a grant: first every layer says what fits now ('f', no write), then
-- the least of that, up to the cost asked and at least one, is charged to
-- every layer all or nothing, as 'a' charges. The reply gains, as one
-- algorithm's grant does (common.lua): the units charged, the clock, the
-- holders, and the ns until the earliest window of a fixed-window layer
-- ends (-1: none). A grant's ARGV ends with the instance's id and the
-- lease's length in ns.

-- The call's `redis` (real), the writes it holds (held) and what they
-- wrote (seen), set by the body: the recorder, made once, works through
-- them. A key written earlier in the call (multi.lua may decide one key
-- twice, and two layers of equal parameters share a key) is read from
-- seen, as the server would read it once the writes are made: a string's
-- value and TTL (SET with PX, DEL); a key written otherwise (a sorted set)
-- cannot be read again. begin sets them, and the recorder's R and now.
local real, held, seen

-- see notes in seen what a held write, the command c (upper case) on k,
-- leaves there.
local function see(c, k, v, px, ms)
  if c == 'SET' and px and string.upper(px) == 'PX' then
    seen[k] = {v, tonumber(ms)}
  elseif c == 'DEL' then
    seen[k] = {false, -2}
  else
    seen[k] = true
  end
end

-- forget drops the writes held after the first mark, and what they left
-- in seen: a Multi's item that refuses is charged nothing, so the items
-- after it in the call see its keys as if it had not run (multi.lua), as
-- their own limiters, called one after the other, would.
local function forget(mark)
  for i = #held, mark + 1, -1 do
    held[i] = nil
  end
  seen = {}
  for i = 1, mark do
    local w = held[i]
    see(string.upper(w[1]), w[2], w[3], w[4], w[5])
  end
end
local reads = {GET = true, EXISTS = true, PTTL = true, ZSCORE = true, ZRANGE = true,
  ZRANGEBYSCORE = true}
local writes = {SET = true, PEXPIRE = true, DEL = true, ZADD = true, ZREM = true,
  ZREMRANGEBYRANK = true, ZREMRANGEBYSCORE = true}
local recorder = {
  error_reply = function(...)
    return real.error_reply(...)
  end,
  status_reply = function(...)
    return real.status_reply(...)
  end,
  fix = function(cmd, ...)
    if not writes[string.upper(cmd)] then
      error('floodgate: a stack cannot fix with ' .. cmd)
    end
    return real.call(cmd, ...)
  end,
  call = function(cmd, ...)
    local c = string.upper(cmd)
    local k = ...
    if writes[c] then
      held[#held + 1] = {cmd, ...}
      see(c, ...)
      return true
    end
    if not reads[c] then
      error('floodgate: a stack cannot hold ' .. c)
    end
    local w = seen[k]
    if w == nil then
      return real.call(cmd, ...)
    elseif w ~= true and c == 'GET' then
      return w[1]
    elseif w ~= true and c == 'PTTL' then
      return w[2]
    end
    error('floodgate: ' .. c .. ' of ' .. k .. ' after a write held in the same call')
  end,
}

-- begin starts a call on db, the call's `redis`, whose ARGV[1] is op: it
-- sets the recorder's state, reads the call's instant once for every
-- layer (a test clock follows the operation, 'a S N', as in common.lua;
-- else the server's TIME) and returns the operation alone.
local function begin(db, op)
  real, held, seen = db, {}, {}
  local s, n
  if #op == 1 then
    local t = real.call('TIME')
    s, n = t[1], t[2] * 1000
  else
    op, s, n = string.match(op, '^(%a) (%-?%d+) (%d+)$')
  end
  recorder.R, recorder.now = tonumber(s), tonumber(n)
  return op
end

-- combine is the decision of layers whose replies are rs[1..n] (every
-- layer answered), as core's Stack makes it: an admission names the layer
-- with the least left and waits for the longest delay; a denial names the
-- layer with the longest wait, and what is left is the least any denying
-- layer has. The fifth number is the index from 0 of the layer named.
local function combine(rs, n)
  local pick, allowed = 1, true
  for i = 1, n do
    if rs[i][1] ~= 1 then
      allowed = false
    end
  end
  if allowed then
    local delay = 0
    for i = 1, n do
      if rs[i][2] < rs[pick][2] then
        pick = i
      end
      delay = math.max(delay, rs[i][3])
    end
    return {1, rs[pick][2], delay, rs[pick][4], pick - 1}
  end
  local left
  pick = nil
  for i = 1, n do
    local r = rs[i]
    if r[1] ~= 1 then
      if pick == nil or r[3] > rs[pick][3] then
        pick = i
      end
      if left == nil or r[2] < left then
        left = r[2]
      end
    end
  end
  return {0, left, rs[pick][3], rs[pick][4], pick - 1}
end

local layers, leased = {}, {}
-- LAYERS --
-- CALL --
local op, cost = begin(redis, ARGV[1]), ARGV[2]
local R, now = recorder.R, recorder.now

local n = #KEYS
if quota then
  n = n - 1
end
local replies = {}
local allowed = true
local at = 4
for i = 1, n do
  at = at + tonumber(ARGV[at]) + 1
end
local member = ARGV[at]

-- A grant: what fits under every layer, and the earliest window's end.
local grant, wend = op == 'g', -1
if grant then
  local k = tonumber(cost)
  at = 4
  for i = 1, n do
    local c = tonumber(ARGV[at])
    local args = {'f', cost, ARGV[3]}
    for j = 1, c do
      args[3 + j] = ARGV[at + j]
    end
    at = at + c + 1
    local r = layers[i]({KEYS[i]}, args, recorder)
    if r.err then
      return r
    end
    k = math.min(k, r[1])
    if r[2] >= 0 and (wend < 0 or r[2] < wend) then
      wend = r[2]
    end
  end
  op, cost = 'a', string.format('%.0f', math.max(1, k))
end

at = 4
for i = 1, n do
  local c = tonumber(ARGV[at])
  local args = {op, cost, ARGV[3]}
  for j = 1, c do
    args[3 + j] = ARGV[at + j]
  end
  at = at + c + 1
  if leased[i] then
    args[4 + c] = member
  end
  if leased[i] or (op ~= 'l' and op ~= 'n') then
    local r = layers[i]({KEYS[i]}, args, recorder)
    if r.err then
      return r
    end
    replies[i] = r
    if r[1] ~= 1 then
      allowed = false
    end
  end
end

if allowed or op ~= 'a' then
  for _, w in ipairs(held) do
    real.call(unpack(w))
  end
end
if op == 'r' then
  return {1, 0, 0, 0, 0}
end
if op == 'l' or op == 'n' then
  for i = 1, n do
    if replies[i] and replies[i][1] == 1 then
      return {1, 0, 0, 0, 0}
    end
  end
  return {0, 0, 0, 0, 0}
end

-- grantReply is r, a grant's decision, with what a grant adds.
local function grantReply(r)
  if not grant then
    return r
  end
  local hk, id, length = KEYS[#KEYS], ARGV[#ARGV - 1], tonumber(ARGV[#ARGV])
  local t = R * 1000 + math.floor(now / 1e6)
  local ms = math.ceil(length / 1e6)
  real.call('ZREMRANGEBYSCORE', hk, '-inf', t)
  real.call('ZADD', hk, t + ms, id)
  real.call('PEXPIRE', hk, ms + tonumber(ARGV[3]))
  r[6], r[7], r[8], r[9], r[10] = 0, R, now, real.call('ZCARD', hk), wend
  if r[1] == 1 then
    r[6] = tonumber(cost)
  end
  return r
end

return grantReply(combine(replies, n))
