-- Several keys, each under one or more limits of any algorithm a stack
-- takes (but concurrency and the leaky bucket), decided all or nothing in
-- one script (multi.go). Go builds the script: stack.lua's part before
-- '-- LAYERS --' (its recorder and combine), then one function per
-- algorithm in algs, named by its files (fnID in functions.go) and holding
-- that algorithm's whole script, then this file's body. Every layer runs
-- against the recorder: its writes are made only when every layer of every
-- item admits (for a refund, always), and a key decided twice in one call
-- is read as the first decision left it (stack.lua). In a Functions
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

-- CALL --
local op, margin = begin(redis, ARGV[1]), ARGV[2]

local out, allowed = {}, true
local at, k = 3, 1
-- One KEYS and one ARGV table serve every layer in turn: a layer reads
-- them only while it runs. wide is how many parameters args holds.
local keys, args, wide = {}, {op, 0, margin}, 0
while at <= #ARGV do
  local n = tonumber(ARGV[at + 1])
  args[2] = ARGV[at]
  at = at + 2
  local replies, d = {}, nil
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
