-- Local quota (quota.go), in the scripts of limiters made WithLocalQuota,
-- between common.lua and the algorithm's file. KEYS[2] holds the
-- instances holding a lease on KEYS[1]: a sorted set of their ids, each
-- scored by the instant its lease ends (ms since the epoch), with a TTL of
-- the longest lease. A grant's ARGV ends with the instance's id and the
-- lease's length in ns.

-- holders notes this instance as holding a lease until the lease's end,
-- drops the holders whose lease has ended, and returns how many hold one.
local function holders()
  local hk, id, length = KEYS[2], ARGV[#ARGV - 1], tonumber(ARGV[#ARGV])
  local t = R * 1000 + math.floor(now / 1e6)
  local ms = math.ceil(length / 1e6)
  redis.call('ZREMRANGEBYSCORE', hk, '-inf', t)
  redis.call('ZADD', hk, t + ms, id)
  redis.call('PEXPIRE', hk, ms + margin)
  return redis.call('ZCARD', hk)
end
