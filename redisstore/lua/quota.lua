-- Local quota (quota.go), in the scripts of limiters made WithLocalQuota,
-- between common.lua and the algorithm's file. KEYS[2] holds the
-- instances holding a lease on KEYS[1]: a sorted set of their ids, each
-- scored by the instant its lease ends (ms since the epoch), with a TTL of
-- the longest lease. A grant's ARGV ends with the instance's id and the
-- lease's length in ns.

-- The call's KEYS and ARGV, for holders.
local qkeys, qargs

-- holders notes this instance as holding a lease until a lease's length
-- after its end (an instance between two leases, its last spent or its
-- next not yet fitting, still shares the key), drops the holders whose
-- lease ended before that, and returns how many hold one.
local function holders()
  local hk, id, length = qkeys[2], qargs[#qargs - 1], tonumber(qargs[#qargs])
  local t = R * 1000 + math.floor(now / 1e6)
  local ms = 2 * math.ceil(length / 1e6)
  db.call('ZREMRANGEBYSCORE', hk, '-inf', t)
  db.call('ZADD', hk, t + ms, id)
  db.call('PEXPIRE', hk, ms + margin)
  return db.call('ZCARD', hk)
end

-- CALL --
qkeys, qargs = KEYS, ARGV
if op == 'G' then
  -- A grant ahead: units due within half a lease may be charged, and are
  -- spent only once due (quota_decide.go), so a small bucket's units are
  -- not lost to the round trip that asks for each of them.
  op, ahead = 'g', math.floor(tonumber(qargs[#qargs]) / 2)
end
