//! The Lua scripts behind [`super::RedisStore`]. Each runs atomically on
//! the Redis server (EVALSHA, loaded on first use), so every check-then-write
//! of the store contract is one step no other client can interleave with.
//!
//! Keys (`P` is the prefix, `ARGV[1]` of every script):
//! - `P rec:ID`: a hash, one field per record column (`s` status, `p`
//!   principal, `ex` expiry, `v` version, `r` result JSON, ...);
//! - `P audit:ID`: a hash, version → audit entry JSON;
//! - `P claim:KEY`: a string, `n` (bare claim) or `v` + outcome JSON;
//! - `P epoch`: the data set's epoch (decimal), set when first missing;
//! - sorted sets by time: `P exp` (record expiry), `P due` (expiry of
//!   pending records only), `P audit_at` (`ID:VERSION` by write time),
//!   `P claim_at` (claim key by `keep_until_ms`).
//!
//! Scripts name keys they build from ARGV, which a single Redis (not Redis
//! Cluster) allows.

/// ARGV: P, id, created, expires, creation audit JSON, field/value pairs…
/// → 1 created, 0 the id exists.
pub const CREATE: &str = r"
local P, id = ARGV[1], ARGV[2]
local rk = P .. 'rec:' .. id
if redis.call('EXISTS', rk) == 1 then return 0 end
redis.call('HSET', rk, unpack(ARGV, 6))
redis.call('ZADD', P .. 'exp', ARGV[4], id)
redis.call('ZADD', P .. 'due', ARGV[4], id)
redis.call('HSET', P .. 'audit:' .. id, '0', ARGV[5])
redis.call('ZADD', P .. 'audit_at', ARGV[3], id .. ':0')
return 1
";

/// ARGV: P, id, principal, target status, now, result JSON or '',
/// audit JSON of an expiry, audit JSON of the transition →
/// `{'nf'}`, `{'wp'}`, `{'expired'}`, `{'applied', hash…}` or
/// `{'settled', hash…}`. Only pending → terminal moves, so the transition
/// always writes version 1.
pub const COMPLETE: &str = r"
local P, id, who, target, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local rk = P .. 'rec:' .. id
local f = redis.call('HMGET', rk, 's', 'p', 'ex')
if not f[1] then return {'nf'} end
if f[2] ~= who then return {'wp'} end
local code = 'settled'
if f[1] == 'pending' then
  local ak = P .. 'audit:' .. id
  redis.call('ZREM', P .. 'due', id)
  redis.call('HINCRBY', rk, 'v', 1)
  redis.call('ZADD', P .. 'audit_at', ARGV[5], id .. ':1')
  if now >= tonumber(f[3]) then
    redis.call('HSET', rk, 's', 'expired')
    redis.call('HSET', ak, '1', ARGV[7])
    return {'expired'}
  end
  redis.call('HSET', rk, 's', target)
  if ARGV[6] ~= '' then redis.call('HSET', rk, 'r', ARGV[6]) end
  redis.call('HSET', ak, '1', ARGV[8])
  code = 'applied'
end
local out = {code}
for _, x in ipairs(redis.call('HGETALL', rk)) do out[#out + 1] = x end
return out
";

/// ARGV: P, now, batch, audit JSON of an expiry → `{moved, scanned}`.
pub const EXPIRE_DUE: &str = r"
local P = ARGV[1]
local ids = redis.call('ZRANGEBYSCORE', P .. 'due', '-inf', ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
local n = 0
for _, id in ipairs(ids) do
  local rk = P .. 'rec:' .. id
  redis.call('ZREM', P .. 'due', id)
  if redis.call('HGET', rk, 's') == 'pending' then
    redis.call('HSET', rk, 's', 'expired')
    redis.call('HINCRBY', rk, 'v', 1)
    redis.call('HSET', P .. 'audit:' .. id, '1', ARGV[4])
    redis.call('ZADD', P .. 'audit_at', ARGV[2], id .. ':1')
    n = n + 1
  end
end
return {n, #ids}
";

/// ARGV: P, record/audit cutoff or '' (none yet), now, batch →
/// `{records, audit, claims, more}` deleted by this batch.
pub const PURGE: &str = r"
local P, cut, now, B = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local recs, audit, claims, more = 0, 0, 0, 0
if cut ~= '' then
  local ids = redis.call('ZRANGEBYSCORE', P .. 'exp', '-inf', cut, 'LIMIT', 0, B)
  if #ids == B then more = 1 end
  for _, id in ipairs(ids) do
    local ak = P .. 'audit:' .. id
    local vs = redis.call('HKEYS', ak)
    for _, v in ipairs(vs) do redis.call('ZREM', P .. 'audit_at', id .. ':' .. v) end
    audit = audit + #vs
    recs = recs + redis.call('DEL', P .. 'rec:' .. id)
    redis.call('DEL', ak)
    redis.call('ZREM', P .. 'exp', id)
    redis.call('ZREM', P .. 'due', id)
  end
  local es = redis.call('ZRANGEBYSCORE', P .. 'audit_at', '-inf', cut, 'LIMIT', 0, B)
  if #es == B then more = 1 end
  for _, e in ipairs(es) do
    local i = string.find(e, ':', 1, true)
    audit = audit + redis.call('HDEL', P .. 'audit:' .. string.sub(e, 1, i - 1), string.sub(e, i + 1))
    redis.call('ZREM', P .. 'audit_at', e)
  end
end
local ks = redis.call('ZRANGEBYSCORE', P .. 'claim_at', '-inf', '(' .. now, 'LIMIT', 0, B)
if #ks == B then more = 1 end
for _, k in ipairs(ks) do
  claims = claims + redis.call('DEL', P .. 'claim:' .. k)
  redis.call('ZREM', P .. 'claim_at', k)
end
return {recs, audit, claims, more}
";

/// ARGV: P, key, stored value, keep_until, expected epoch (`0`: any),
/// fresh epoch → `{1, ''}` won, `{0, stored value}` taken, or `{2, epoch}`
/// when the epoch is not the expected one (nothing claimed). A missing
/// epoch (the data set was lost) is replaced by the fresh one. `SET NX` is
/// the claim itself.
pub const CLAIM: &str = r"
if ARGV[5] ~= '0' then
  local ek = ARGV[1] .. 'epoch'
  redis.call('SET', ek, ARGV[6], 'NX')
  local e = redis.call('GET', ek)
  if e ~= ARGV[5] then
    return {2, e}
  end
end
local ck = ARGV[1] .. 'claim:' .. ARGV[2]
if redis.call('SET', ck, ARGV[3], 'NX') then
  redis.call('ZADD', ARGV[1] .. 'claim_at', ARGV[4], ARGV[2])
  return {1, ''}
end
return {0, redis.call('GET', ck)}
";
