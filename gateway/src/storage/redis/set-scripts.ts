/**
 * The Lua scripts of the sets of a Redis partition replica (see `redis-sets.ts`).
 *
 * The planners (Bigsets Algorithms 1 and 2) run in the gateway, in TypeScript, as everywhere
 * else; the scripts make "read the clocks, plan, write" atomic per set with a compare-and-set:
 * `SET_READ_SCRIPT` returns the set's write counter (field `n` of its stamp) with the clock and
 * the touched elements' keys, and the writing scripts apply the planned writes only if `n` is
 * still what was read (else they answer `RETRY` and change nothing). Every set write bumps `n`,
 * so a plan is never written over a state it did not see, whichever gateway wrote in between.
 *
 * Removes delete their element keys in the same script (`removal: 'delete'`): a `ZREM` costs
 * O(log n) whatever the set's size, and Redis has no compaction hook to leave them to, so the
 * set-tombstone stays empty and nothing needs compacting.
 *
 * Write scripts start with `#!lua` (refused up front on a read-only replica), validate before
 * their first write and, as every replica script, append to the log and advance `sv` in the same
 * script, so Redis replication carries them to followers atomically. Read scripts carry
 * `flags=no-writes` and run on followers. Replies are flat arrays (read with `evalshaBuffer`, so
 * binary members and clocks arrive intact).
 */
import { MAX_SAFE_COUNTER } from '@causeway/core'
import { LEADER_CHECK_LUA } from './epoch-scripts.js'
import { LuaScript } from './lua-script.js'
import { SV_LUA } from './sv-lua.js'

// The leader's HLC update, as in `replica-scripts.ts`'s WRITE_SCRIPT (NuKV `updateHLC(dt)`).
const HLC_LUA = `
local function hlc_parse(h)
  if not h then return 0, 0 end
  return tonumber(string.sub(h, 1, 12), 16), tonumber(string.sub(h, 13, 16), 16)
end
local function hlc_stamp(meta, dt, now)
  local pc
  if now ~= '' then pc = tonumber(now) else
    local t = redis.call('TIME')
    pc = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  local lp, cp = hlc_parse(redis.call('HGET', meta, 'hlc'))
  local tl, tc = hlc_parse(dt)
  local l = math.max(lp, pc, tl)
  local c
  if l == lp and l == tl then c = math.max(cp, tc) + 1
  elseif l == lp then c = cp + 1
  elseif l == tl then c = tc + 1
  else c = 0 end
  if c > 65535 then l = l + 1; c = 0 end
  if l > 281474976710655 then return nil, pc end
  return string.format('%012x%04x', l, c), pc
end
`

// Applies the planned writes. `a` is the ARGV index of the clock; returns nothing.
const APPLY_LUA = `
local function apply_plan(clock_key, zset_key, size_key, a)
  if ARGV[a] ~= '' then redis.call('SET', clock_key, ARGV[a]) end
  local size_delta = tonumber(ARGV[a + 1])
  local n_add = tonumber(ARGV[a + 2])
  local i = a + 3
  local chunk = {}
  for j = 1, n_add do
    chunk[#chunk + 1] = '0'
    chunk[#chunk + 1] = ARGV[i]
    i = i + 1
    if #chunk >= 1000 then redis.call('ZADD', zset_key, unpack(chunk)); chunk = {} end
  end
  if #chunk > 0 then redis.call('ZADD', zset_key, unpack(chunk)) end
  local n_del = tonumber(ARGV[i])
  i = i + 1
  chunk = {}
  for j = 1, n_del do
    chunk[#chunk + 1] = ARGV[i]
    i = i + 1
    if #chunk >= 1000 then redis.call('ZREM', zset_key, unpack(chunk)); chunk = {} end
  end
  if #chunk > 0 then redis.call('ZREM', zset_key, unpack(chunk)) end
  if size_delta ~= 0 then
    local size = redis.call('INCRBY', size_key, size_delta)
    if size <= 0 then redis.call('DEL', size_key) end
  end
end
local function stamp_set(stamp_key, origin, idx, ts)
  redis.call('HSET', stamp_key, origin, string.format('%d', idx))
  local cur = redis.call('HGET', stamp_key, 'ts')
  if not cur or ts > cur then redis.call('HSET', stamp_key, 'ts', ts) end
  redis.call('HINCRBY', stamp_key, 'n', 1)
end
${SV_LUA}
`

/**
 * What a set write plans against. KEYS: stamp, clock, elements. ARGV: k, then k pairs of lex
 * bounds (`[start`, `(end`), one per touched element. Reply: n (write counter), clock ('' when
 * none), then per element: its member count and its members.
 */
export const SET_READ_SCRIPT = new LuaScript(`#!lua flags=no-writes
local reply = { redis.call('HGET', KEYS[1], 'n') or '0', redis.call('GET', KEYS[2]) or '' }
local k = tonumber(ARGV[1])
for i = 0, k - 1 do
  local members = redis.call('ZRANGEBYLEX', KEYS[3], ARGV[2 + i * 2], ARGV[3 + i * 2])
  reply[#reply + 1] = tostring(#members)
  for _, m in ipairs(members) do reply[#reply + 1] = m end
end
return reply
`)

/**
 * A leader's set write. KEYS: meta, sv, log(region), clock, elements, size, stamp.
 * ARGV: region, regions, dt, now ('' for the server's TIME), expected n, set name, delta (JSON),
 * the writer's leader token ('' for none; `epoch-scripts.ts`), then the plan: clock ('' unchanged),
 * size delta, #adds, adds..., #dels, dels...
 * Reply: 'RETRY' when the set changed since it was read; else 'OK', idx, ts, at, sv[0..D-1].
 */
export const SET_WRITE_SCRIPT = new LuaScript(`#!lua
${HLC_LUA}
${APPLY_LUA}
if (redis.call('HGET', KEYS[7], 'n') or '0') ~= ARGV[5] then return { 'RETRY' } end
local ts, pc = hlc_stamp(KEYS[1], ARGV[3], ARGV[4])
if not ts then return redis.error_reply('CW_HLC_EXHAUSTED HLC ran out of milliseconds') end
local idx = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0') + 1
-- The bound of every counter (counter-bounds.ts): never an idx TypeScript would refuse.
if idx > ${MAX_SAFE_COUNTER} then return redis.error_reply('CW_COUNTER_EXHAUSTED the log idx cannot grow') end
local leader_token = ARGV[8]
${LEADER_CHECK_LUA}
local at = string.format('%d', pc)
redis.call('XADD', KEYS[3], string.format('%d-0', idx), 'k', ARGV[6], 'ts', ts, 'at', at, 'b', ARGV[7])
apply_plan(KEYS[4], KEYS[5], KEYS[6], 9)
stamp_set(KEYS[7], ARGV[1], idx, ts)
redis.call('HSET', KEYS[1], 'hlc', ts)
redis.call('HSET', KEYS[2], ARGV[1], string.format('%d', idx))
local reply = { 'OK', string.format('%d', idx), ts, at }
for _, v in ipairs(sv_publish(KEYS[2], tonumber(ARGV[2]))) do reply[#reply + 1] = v end
return reply
`)

/**
 * A set entry shipped from another region or replicated from the leader.
 * KEYS: meta, sv, log(origin), clock, elements, size, stamp.
 * ARGV: origin, idx, regions, ts, at, set name, delta (JSON), expected n, then the plan as in
 * {@link SET_WRITE_SCRIPT}. Reply: 'SKIP' (already applied), 'GAP' (an earlier entry of the
 * origin is missing), 'RETRY' (the set changed since it was read) or 'OK', then sv[0..D-1].
 */
export const SET_INGEST_SCRIPT = new LuaScript(`#!lua
${APPLY_LUA}
local regions = tonumber(ARGV[3])
local idx = tonumber(ARGV[2])
local cur = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
local status = 'OK'
if idx <= cur then status = 'SKIP'
elseif idx > cur + 1 then status = 'GAP'
elseif (redis.call('HGET', KEYS[7], 'n') or '0') ~= ARGV[8] then status = 'RETRY'
else
  local ts = ARGV[4]
  redis.call('XADD', KEYS[3], string.format('%d-0', idx), 'k', ARGV[6], 'ts', ts, 'at', ARGV[5], 'b', ARGV[7])
  apply_plan(KEYS[4], KEYS[5], KEYS[6], 9)
  stamp_set(KEYS[7], ARGV[1], idx, ts)
  local hlc = redis.call('HGET', KEYS[1], 'hlc')
  if not hlc or ts > hlc then redis.call('HSET', KEYS[1], 'hlc', ts) end
  redis.call('HSET', KEYS[2], ARGV[1], string.format('%d', idx))
end
local reply = { status }
local sv
if status == 'OK' then sv = sv_publish(KEYS[2], regions) else sv = sv_list(KEYS[2], regions) end
for _, v in ipairs(sv) do reply[#reply + 1] = v end
return reply
`)

// Appends a set's stamp (`ts`, '' when none, then seen[0..D-1]) to `reply`: one HMGET.
const STAMP_LUA = `
local function add_stamp(reply, key, regions)
  local fields = { 'ts' }
  for d = 0, regions - 1 do fields[#fields + 1] = tostring(d) end
  local values = redis.call('HMGET', key, unpack(fields))
  reply[#reply + 1] = values[1] or ''
  for d = 1, regions do reply[#reply + 1] = values[d + 1] or '0' end
  return reply
end
`

/**
 * `has`: one element's members and the stamp, atomically. KEYS: stamp, elements.
 * ARGV: regions, start bound, end bound. Reply: ts ('' when none), seen[0..D-1], members...
 */
export const SET_HAS_SCRIPT = new LuaScript(`#!lua flags=no-writes
${STAMP_LUA}
local reply = add_stamp({}, KEYS[1], tonumber(ARGV[1]))
for _, m in ipairs(redis.call('ZRANGEBYLEX', KEYS[2], ARGV[2], ARGV[3])) do reply[#reply + 1] = m end
return reply
`)

/**
 * `size` and the stamp, atomically. KEYS: stamp, size. ARGV: regions.
 * Reply: size, ts ('' when none), seen[0..D-1].
 */
export const SET_SIZE_SCRIPT = new LuaScript(`#!lua flags=no-writes
${STAMP_LUA}
return add_stamp({ redis.call('GET', KEYS[2]) or '0' }, KEYS[1], tonumber(ARGV[1]))
`)

/**
 * The stamp alone (read after a scan, so it covers what the scan returned). KEYS: stamp.
 * ARGV: regions. Reply: ts ('' when none), seen[0..D-1].
 */
export const SET_STAMP_SCRIPT = new LuaScript(`#!lua flags=no-writes
${STAMP_LUA}
return add_stamp({}, KEYS[1], tonumber(ARGV[1]))
`)

/** Every script of the sets, for loading after a (re)connection. */
export const SET_SCRIPTS = [
  SET_READ_SCRIPT,
  SET_WRITE_SCRIPT,
  SET_INGEST_SCRIPT,
  SET_HAS_SCRIPT,
  SET_SIZE_SCRIPT,
  SET_STAMP_SCRIPT,
]
