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
-- NuKV Algorithm 2, updateHLC(dt): past the last HLC (meta 'hlc'), the physical clock and dt.
-- now_arg: ms, or '' for the server's TIME. Returns ts and the physical ms, or nil when the HLC
-- ran out of milliseconds. Writes nothing.
local function hlc_stamp(meta_key, dt, now_arg)
  local pc
  if now_arg ~= '' then pc = tonumber(now_arg) else
    local now = redis.call('TIME')
    pc = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
  end
  local lp, cp = hlc_parse(redis.call('HGET', meta_key, 'hlc'))
  local tl, tc = hlc_parse(dt)
  local l = math.max(lp, pc, tl)
  local c
  if l == lp and l == tl then c = math.max(cp, tc) + 1
  elseif l == lp then c = cp + 1
  elseif l == tl then c = tc + 1
  else c = 0 end
  -- A counter past 16 bits carries into the milliseconds rather than wrap.
  if c > 65535 then l = l + 1; c = 0 end
  if l > 281474976710655 then return nil end
  return hlc_format(l, c), pc
end
`

// The sibling sets of siblings namespaces, in the text form of `sibling-set.ts`: entries split
// by RS (\30), fields by US (\31): actor, counter, then siblings newest first, each an opaque
// string (ts then '=' value or '-'). A parsed set is a list of { actor, counter, siblings },
// actors ascending. The functions are the DVVSet operations of @causeway/core's DvvSet (update
// with a context, sync), restricted to sets without anonymous values, which storage never holds.
const SIBLINGS_LUA = `
local RS, US = '\\30', '\\31'
local function split(text, sep)
  local out, pos = {}, 1
  while true do
    local at = string.find(text, sep, pos, true)
    if not at then out[#out + 1] = string.sub(text, pos); return out end
    out[#out + 1] = string.sub(text, pos, at - 1)
    pos = at + 1
  end
end
-- Returns the set, or nil for malformed text (so callers can refuse before writing anything).
local function set_parse(text)
  local set = {}
  if not text or text == '' then return set end
  local last = -1
  for _, part in ipairs(split(text, RS)) do
    local f = split(part, US)
    local actor, counter = tonumber(f[1]), tonumber(f[2])
    if not actor or not counter or actor <= last or counter < #f - 2 then return nil end
    local siblings = {}
    for i = 3, #f do siblings[#siblings + 1] = f[i] end
    set[#set + 1] = { actor, counter, siblings }
    last = actor
  end
  return set
end
local function set_encode(set)
  local parts = {}
  for i, e in ipairs(set) do
    local f = { string.format('%d', e[1]), string.format('%d', e[2]) }
    for _, s in ipairs(e[3]) do f[#f + 1] = s end
    parts[i] = table.concat(f, US)
  end
  return table.concat(parts, RS)
end
-- One actor's entry of two sets: the higher counter (the first on a tie) keeps the values the
-- other side has not discarded.
local function merge_entry(a, b)
  local newer, older = a, b
  if b[2] > a[2] then newer, older = b, a end
  local discarded = older[2] - #older[3]
  local keep = math.min(#newer[3], newer[2] - discarded)
  if keep == #newer[3] then return newer end
  local siblings = {}
  for i = 1, keep do siblings[i] = newer[3][i] end
  return { newer[1], newer[2], siblings }
end
local function set_sync(a, b)
  local out, i, j = {}, 1, 1
  while i <= #a and j <= #b do
    if a[i][1] < b[j][1] then out[#out + 1] = a[i]; i = i + 1
    elseif a[i][1] > b[j][1] then out[#out + 1] = b[j]; j = j + 1
    else out[#out + 1] = merge_entry(a[i], b[j]); i = i + 1; j = j + 1 end
  end
  for k = i, #a do out[#out + 1] = a[k] end
  for k = j, #b do out[#out + 1] = b[k] end
  return out
end
-- update(new(context, sibling), local, actor): context is a set without siblings.
local function set_update(context, local_set, actor, sibling)
  local synced = set_sync(context, local_set)
  local out, placed = {}, false
  for _, e in ipairs(synced) do
    if not placed and e[1] == actor then
      local siblings = { sibling }
      for _, s in ipairs(e[3]) do siblings[#siblings + 1] = s end
      out[#out + 1] = { actor, e[2] + 1, siblings }
      placed = true
    else
      if not placed and e[1] > actor then
        out[#out + 1] = { actor, 1, { sibling } }
        placed = true
      end
      out[#out + 1] = e
    end
  end
  if not placed then out[#out + 1] = { actor, 1, { sibling } } end
  return out
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
-- has_value: '1' a value, '0' a tombstone, '2' a sibling write (value = its sibling set).
local function append_log(lkey, idx, key, ts, at, has_value, value)
  local id = string.format('%d-0', idx)
  if has_value == '1' then
    redis.call('XADD', lkey, id, 'k', key, 'ts', ts, 'at', at, 'v', value)
  elseif has_value == '2' then
    redis.call('XADD', lkey, id, 'k', key, 'ts', ts, 'at', at, 's', value)
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
local ts, pc = hlc_stamp(KEYS[1], ARGV[3], ARGV[7])
if not ts then return redis.error_reply('CW_HLC_EXHAUSTED HLC ran out of milliseconds') end
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

/**
 * Leader write of a key in a siblings namespace: as {@link WRITE_SCRIPT}, but the value (or
 * tombstone) becomes a new sibling of the region, superseding what the context covers, and the
 * log entry carries the resulting set. KEYS: meta, sv, log(region), siblings(key).
 * ARGV: region, regions, dt, key, hasValue ('1'|'0'), value, now, context (a sibling set text
 * without siblings: `actor US counter`, entries split by RS).
 * Reply: idx, ts, at, the resulting set's text, then sv[0..regions-1].
 */
export const WRITE_SIBLING_SCRIPT = new LuaScript(`#!lua
${HLC_LUA}
${VERSION_LUA}
${SIBLINGS_LUA}
local region = tonumber(ARGV[1])
local regions = tonumber(ARGV[2])
local context = set_parse(ARGV[8])
if not context then return redis.error_reply('CW_BAD_CONTEXT malformed causal context') end
local local_set = set_parse(redis.call('GET', KEYS[4]))
if not local_set then return redis.error_reply('CW_BAD_SET stored sibling set is malformed') end
local ts, pc = hlc_stamp(KEYS[1], ARGV[3], ARGV[7])
if not ts then return redis.error_reply('CW_HLC_EXHAUSTED HLC ran out of milliseconds') end
local sibling
if ARGV[5] == '1' then sibling = ts .. '=' .. ARGV[6] else sibling = ts .. '-' end
local set_text = set_encode(set_update(context, local_set, region, sibling))
local idx = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0') + 1
local at = string.format('%d', pc)
append_log(KEYS[3], idx, ARGV[4], ts, at, '2', set_text)
redis.call('SET', KEYS[4], set_text)
redis.call('HSET', KEYS[1], 'hlc', ts)
redis.call('HSET', KEYS[2], ARGV[1], string.format('%d', idx))
local reply = { string.format('%d', idx), ts, at, set_text }
for _, v in ipairs(sv_list(KEYS[2], regions)) do reply[#reply + 1] = v end
return reply
`)

/** Fields per entry in {@link INGEST_SCRIPT}'s ARGV. */
export const INGEST_FIELDS = 7

/**
 * Shipped (`receive`) or replicated (`apply`) entries. KEYS: meta, sv, then for each entry its
 * origin's log and its version key (its siblings key for a sibling write). ARGV: mode ('batch': a
 * gap stops the whole batch; 'per-origin': a gap stops only that origin), regions, n, then per
 * entry origin, idx, key, hasValue ('1' value, '0' tombstone, '2' sibling write whose value is
 * its set), value, ts, at. Entries at or below `sv[origin]` are skipped; a sibling write's set is
 * merged (`sync`) into the key's. Advances the HLC to at least each applied entry's ts.
 * Reply: sv[0..regions-1].
 */
export const INGEST_SCRIPT = new LuaScript(`#!lua
${VERSION_LUA}
${SIBLINGS_LUA}
local stop_all = ARGV[1] == 'batch'
local regions = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
-- Parse every shipped set, and the stored sets they merge into, before the first write: a
-- script error does not roll back.
local shipped, sets, set_keys = {}, {}, {}
for i = 0, n - 1 do
  local a = 4 + i * ${INGEST_FIELDS}
  if ARGV[a + 3] == '2' then
    shipped[i] = set_parse(ARGV[a + 4])
    if not shipped[i] then return redis.error_reply('CW_BAD_SET malformed sibling set in entry ' .. ARGV[a] .. ':' .. ARGV[a + 1]) end
    local skey = KEYS[4 + i * 2]
    if not sets[skey] then
      sets[skey] = set_parse(redis.call('GET', skey))
      if not sets[skey] then return redis.error_reply('CW_BAD_SET stored sibling set is malformed') end
      set_keys[#set_keys + 1] = skey
    end
  end
end
local merged = {}
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
      if shipped[i] then
        local skey = KEYS[4 + i * 2]
        sets[skey] = set_sync(sets[skey], shipped[i])
        merged[skey] = true
      else
        store_version(KEYS[4 + i * 2], ts, tonumber(origin), ARGV[a + 3], ARGV[a + 4])
      end
      if ts > hlc then hlc = ts end
      sv[origin] = idx
      if not touched_set[origin] then
        touched_set[origin] = true
        touched[#touched + 1] = origin
      end
    end
  end
end
for _, skey in ipairs(set_keys) do
  if merged[skey] then redis.call('SET', skey, set_encode(sets[skey])) end
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
 * A sibling set and the `sv` it was read at, atomically; runs on replicas.
 * KEYS: siblings(key), sv. ARGV: regions. Reply: the set's text ('' when none), then sv.
 */
export const READ_SIBLINGS_SCRIPT = new LuaScript(`#!lua flags=no-writes
local regions = tonumber(ARGV[1])
local reply = { redis.call('GET', KEYS[1]) or '' }
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
