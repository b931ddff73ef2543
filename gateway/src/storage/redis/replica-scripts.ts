/**
 * The Lua scripts of a Redis partition replica. Each mutation is one script, so it is atomic on
 * the leader and, since Redis 7 replicates a script's effects wrapped in MULTI/EXEC, atomic on
 * every follower too: a follower never shows a log entry without its `sv` or the reverse.
 *
 * Write scripts start with `#!lua` (no flags): Redis then refuses them up front on a read-only
 * replica or when out of memory, instead of failing half-way (a script error does not roll back
 * the writes made before it). They validate everything before their first write.
 * Read scripts carry `flags=no-writes`, so they run on replicas.
 * All replies are flat arrays of strings.
 */
import { LuaScript } from './lua-script.js'

// HLC wire form: 12 hex digits of ms + 4 of counter; Lua 5.1 numbers are doubles and Redis's
// `%x` formats through a 64-bit long, so 48-bit values are exact.
const HLC_LUA = `
local function hlc_parse(h)
  if not h then return 0, 0 end
  return tonumber(string.sub(h, 1, 12), 16), tonumber(string.sub(h, 13, 16), 16)
end
local function hlc_format(l, c)
  return string.format('%012x%04x', l, c)
end
`

const VERSION_LUA = `
-- Keeps the version with the highest (ts, dc); ts strings compare as times.
local function store_version(vkey, ts, dc, has_value, value)
  local cur = redis.call('HMGET', vkey, 'ts', 'dc')
  if cur[1] and (cur[1] > ts or (cur[1] == ts and tonumber(cur[2]) >= dc)) then return end
  if has_value == '1' then
    redis.call('HSET', vkey, 'ts', ts, 'dc', dc, 'v', value)
  else
    redis.call('HSET', vkey, 'ts', ts, 'dc', dc)
    redis.call('HDEL', vkey, 'v')
  end
end
local function append_log(lkey, idx, key, ts, at, has_value, value)
  local id = string.format('%d-0', idx)
  if has_value == '1' then
    redis.call('XADD', lkey, id, 'k', key, 'ts', ts, 'at', at, 'v', value)
  else
    redis.call('XADD', lkey, id, 'k', key, 'ts', ts, 'at', at)
  end
end
local function sv_list(svkey, regions)
  local out = {}
  for d = 0, regions - 1 do out[#out + 1] = redis.call('HGET', svkey, tostring(d)) or '0' end
  return out
end
`

/**
 * Leader write. KEYS: meta, sv, log(region), version(key).
 * ARGV: region, regions, dt, key, hasValue ('1'|'0'), value, now (ms; '' for the server's TIME).
 * Reply: idx, ts, at, then sv[0..regions-1].
 */
export const WRITE_SCRIPT = new LuaScript(`#!lua
${HLC_LUA}
${VERSION_LUA}
local region = tonumber(ARGV[1])
local regions = tonumber(ARGV[2])
local pc
if ARGV[7] ~= '' then pc = tonumber(ARGV[7]) else
  local now = redis.call('TIME')
  pc = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
end
-- NuKV Algorithm 2, updateHLC(dt): past the last HLC, the physical clock and dt.
local lp, cp = hlc_parse(redis.call('HGET', KEYS[1], 'hlc'))
local tl, tc = hlc_parse(ARGV[3])
local l = math.max(lp, pc, tl)
local c
if l == lp and l == tl then c = math.max(cp, tc) + 1
elseif l == lp then c = cp + 1
elseif l == tl then c = tc + 1
else c = 0 end
-- A counter past 16 bits carries into the milliseconds rather than wrap.
if c > 65535 then l = l + 1; c = 0 end
if l > 281474976710655 then return redis.error_reply('CW_HLC_EXHAUSTED HLC ran out of milliseconds') end
local ts = hlc_format(l, c)
local idx = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0') + 1
local at = string.format('%d', pc)
append_log(KEYS[3], idx, ARGV[4], ts, at, ARGV[5], ARGV[6])
store_version(KEYS[4], ts, region, ARGV[5], ARGV[6])
redis.call('HSET', KEYS[1], 'hlc', ts)
redis.call('HSET', KEYS[2], ARGV[1], string.format('%d', idx))
local reply = { string.format('%d', idx), ts, at }
for _, v in ipairs(sv_list(KEYS[2], regions)) do reply[#reply + 1] = v end
return reply
`)

/** Fields per entry in {@link INGEST_SCRIPT}'s ARGV. */
export const INGEST_FIELDS = 7

/**
 * Shipped (`receive`) or replicated (`apply`) entries. KEYS: meta, sv, then for each entry its
 * origin's log and its version key. ARGV: mode ('batch': a gap stops the whole batch;
 * 'per-origin': a gap stops only that origin), regions, n, then per entry
 * origin, idx, key, hasValue, value, ts, at. Entries at or below `sv[origin]` are skipped.
 * Advances the HLC to at least each applied entry's ts. Reply: sv[0..regions-1].
 */
export const INGEST_SCRIPT = new LuaScript(`#!lua
${VERSION_LUA}
local stop_all = ARGV[1] == 'batch'
local regions = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local sv = {}
local stopped = {}
local touched = {}
local touched_set = {}
local hlc = redis.call('HGET', KEYS[1], 'hlc') or '0000000000000000'
local hlc_before = hlc
for i = 0, n - 1 do
  local a = 4 + i * ${INGEST_FIELDS}
  local origin = ARGV[a]
  if not stopped[origin] then
    local idx = tonumber(ARGV[a + 1])
    local cur = sv[origin]
    if cur == nil then
      cur = tonumber(redis.call('HGET', KEYS[2], origin) or '0')
      sv[origin] = cur
    end
    if idx > cur + 1 then
      stopped[origin] = true
      if stop_all then break end
    elseif idx == cur + 1 then
      local ts = ARGV[a + 5]
      append_log(KEYS[3 + i * 2], idx, ARGV[a + 2], ts, ARGV[a + 6], ARGV[a + 3], ARGV[a + 4])
      store_version(KEYS[4 + i * 2], ts, tonumber(origin), ARGV[a + 3], ARGV[a + 4])
      if ts > hlc then hlc = ts end
      sv[origin] = idx
      if not touched_set[origin] then
        touched_set[origin] = true
        touched[#touched + 1] = origin
      end
    end
  end
end
if hlc ~= hlc_before then redis.call('HSET', KEYS[1], 'hlc', hlc) end
for _, origin in ipairs(touched) do
  redis.call('HSET', KEYS[2], origin, string.format('%d', sv[origin]))
end
return sv_list(KEYS[2], regions)
`)

/**
 * A version and the `sv` it was read at, atomically; runs on replicas.
 * KEYS: version(key), sv. ARGV: regions.
 * Reply: found ('1'|'0'), ts, dc, hasValue ('1'|'0'), value, then sv[0..regions-1].
 */
export const READ_SCRIPT = new LuaScript(`#!lua flags=no-writes
local regions = tonumber(ARGV[1])
local v = redis.call('HMGET', KEYS[1], 'ts', 'dc', 'v')
local reply
if v[1] then
  if v[3] then reply = { '1', v[1], v[2], '1', v[3] } else reply = { '1', v[1], v[2], '0', '' } end
else
  reply = { '0', '', '', '0', '' }
end
for d = 0, regions - 1 do reply[#reply + 1] = redis.call('HGET', KEYS[2], tostring(d)) or '0' end
return reply
`)

/**
 * What `open()` loads; runs on replicas. KEYS: meta, sv. ARGV: regions.
 * Reply: epoch ('' when unset), hlc ('' when unset), then sv[0..regions-1].
 */
export const LOAD_SCRIPT = new LuaScript(`#!lua flags=no-writes
local regions = tonumber(ARGV[1])
local m = redis.call('HMGET', KEYS[1], 'epoch', 'hlc')
local reply = { m[1] or '', m[2] or '' }
for d = 0, regions - 1 do reply[#reply + 1] = redis.call('HGET', KEYS[2], tostring(d)) or '0' end
return reply
`)

/** Reads a script's flat reply as strings; throws on any other shape. */
export function stringsOf(reply: unknown, minLength: number): string[] {
  if (!Array.isArray(reply) || reply.length < minLength)
    throw new Error(`unexpected script reply: ${JSON.stringify(reply)}`)
  return reply.map((item) => (typeof item === 'string' ? item : String(item)))
}

/** Parses `count` sv fields starting at `from`. */
export function svOf(reply: readonly string[], from: number, count: number): number[] {
  const sv: number[] = []
  for (let d = 0; d < count; d++) sv.push(Number(reply[from + d] ?? '0'))
  return sv
}
