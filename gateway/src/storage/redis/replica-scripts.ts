/**
 * The Lua scripts of a Redis partition replica. Each mutation is one script, so it is atomic on
 * the leader and, since Redis 7 replicates a script's effects wrapped in MULTI/EXEC, atomic on
 * every follower too: a follower never shows a log entry without its `sv` or the reverse.
 *
 * The protocol is decided in `@causeway/core` (HLC update, version order, DVV update and sync,
 * sibling-set decoding and its bounds). Three of its rules also run here, because a leader write
 * must stamp its HLC, compare versions and update a key's sibling set in the same atomic step as
 * it appends to the log, whichever of several stateless gateways sends it, in one round trip: the
 * HLC update (`hlc_next`), the version order (`version_wins`) and the DVV update and sync with the
 * decoder's rules (`sibling_write`, `set_sync`, `set_parse`, `logged_ok`). Each is a pure
 * function of its arguments, gathered in {@link PROTOCOL_LUA}, and a property test
 * (`gateway/test/storage/redis/lua-agreement.property.test.ts`) runs it and core's TypeScript on
 * the same generated inputs against a real Redis and requires the same outcome. (Set writes plan
 * in TypeScript and only compare-and-apply here: `set-scripts.ts`.)
 *
 * Write scripts start with `#!lua` (no flags): Redis then refuses them up front on a read-only
 * replica or when out of memory, instead of failing half-way (a script error does not roll back
 * the writes made before it). They validate everything before their first write.
 * Read scripts carry `flags=no-writes`, so they run on replicas.
 * All replies are flat arrays of strings.
 *
 * Bounds: the scripts parse sibling sets by the rules of `@causeway/core`'s `decodeSiblingSet`
 * (canonical decimals, actors below the region count, counters in 1..MAX_SAFE_COUNTER, well-formed
 * siblings) and refuse to make a counter or an idx above MAX_SAFE_COUNTER, so they never store what
 * TypeScript would later refuse. A stored set or version that does not parse is never merged into
 * or compared with: the leader's write fails with `CW_QUARANTINED` (the replica then rebuilds the
 * key from its log, see `quarantine.ts`), and shipped or replicated entries for it are logged
 * without touching it. A shipped set that does not parse is logged, not merged.
 */
import { MAX_SAFE_COUNTER } from '@causeway/core'
import { LEADER_CHECK_LUA } from './epoch-scripts.js'
import { LuaScript } from './lua-script.js'
import { SV_LUA } from './sv-lua.js'

// The counter bound, as the Lua number (a double: exact below 2^53).
const BOUNDS_LUA = `
local MAX_COUNTER = ${MAX_SAFE_COUNTER}
-- A canonical decimal of at most 16 digits as a number, or nil.
local function canonical(s)
  if not s or #s == 0 or #s > 16 or not string.match(s, '^[0-9]+$') then return nil end
  if #s > 1 and string.sub(s, 1, 1) == '0' then return nil end
  return tonumber(s)
end
local function is_hlc(s)
  return type(s) == 'string' and #s == 16 and string.match(s, '^[0-9a-f]+$') ~= nil
end
`

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
-- NuKV Algorithm 2, updateHLC(dt), as core's HybridClock.update: past the last HLC (nil for
-- none), the physical clock pc (ms) and dt. Returns the new ts, or nil when the HLC ran out of
-- milliseconds. Pure.
local function hlc_next(last, dt, pc)
  local lp, cp = hlc_parse(last)
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
  return hlc_format(l, c)
end
-- hlc_next past the leader's last HLC (meta 'hlc'). now_arg: ms, or '' for the server's TIME.
-- Returns ts and the physical ms, or nil when the HLC ran out of milliseconds. Writes nothing.
local function hlc_stamp(meta_key, dt, now_arg)
  local pc
  if now_arg ~= '' then pc = tonumber(now_arg) else
    local now = redis.call('TIME')
    pc = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
  end
  local ts = hlc_next(redis.call('HGET', meta_key, 'hlc'), dt, pc)
  if not ts then return nil end
  return ts, pc
end
`

// The sibling sets of siblings namespaces, in the text form of `sibling-set-codec.ts`: entries
// split by RS (\30), fields by US (\31): actor, counter, then siblings newest first, each a
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
local function sibling_ok(s)
  if #s < 17 or not is_hlc(string.sub(s, 1, 16)) then return false end
  local mark = string.sub(s, 17, 17)
  if mark == '-' then return #s == 17 end
  return mark == '=' and #s > 17
end
-- Returns the set, or nil for text decodeSiblingSet would refuse (so callers can refuse before
-- writing anything, or leave the set alone).
local function set_parse(text, regions)
  local set = {}
  if not text or text == '' then return set end
  local last = -1
  for _, part in ipairs(split(text, RS)) do
    local f = split(part, US)
    local actor, counter = canonical(f[1]), canonical(f[2])
    if not actor or actor % 256 >= regions or actor <= last then return nil end
    if not counter or counter < 1 or counter > MAX_COUNTER or counter < #f - 2 then return nil end
    local siblings = {}
    for i = 3, #f do
      if not sibling_ok(f[i]) then return nil end
      siblings[#siblings + 1] = f[i]
    end
    set[#set + 1] = { actor, counter, siblings }
    last = actor
  end
  return set
end
-- A logged set holds its entry's own write: the newest sibling of an actor of its origin (the
-- origin's actor of some epoch, actor % 256 == origin), stamped ts.
local function logged_ok(set, origin, ts)
  for _, e in ipairs(set) do
    if e[1] % 256 == origin and e[3][1] ~= nil and string.sub(e[3][1], 1, 16) == ts then return true end
  end
  return false
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
-- The context as a set without siblings (contextSet in sibling-set.ts). Its counters are taken as
-- they are: the context is signed by the cluster for this key, so each names writes some leader
-- made; one read in another region supersedes what it saw even before those writes arrive here.
local function set_bound(context, local_set)
  local out = {}
  for _, e in ipairs(context) do out[#out + 1] = { e[1], e[2], {} } end
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
-- The leader's sibling write, as writeSibling in sibling-set.ts: the set after it, or nil, an
-- error code and its message when the context claims writes of the leader's actor the key never
-- had, or the new dot would pass the counter bound. Only this epoch's leader issues its actor's
-- dots, so a context claiming more of them than the key has had was not issued by the cluster.
-- Other actors' counters are taken as the signed context names them, never refused.
local function sibling_refusal(context, local_set, actor)
  local own, claimed = 0, 0
  for _, e in ipairs(local_set) do if e[1] == actor then own = e[2] end end
  for _, e in ipairs(context) do if e[1] == actor then claimed = e[2] end end
  if claimed > own then
    return 'CW_BAD_CONTEXT', string.format('it names write %d of region %d (actor %d) to this key, which has had %d', claimed, actor % 256, actor, own)
  end
  if own >= MAX_COUNTER then
    return 'CW_COUNTER_EXHAUSTED', string.format('the key has had %d writes of region %d (actor %d), the most there can be', own, actor % 256, actor)
  end
  return nil
end
local function sibling_write(context, local_set, actor, sibling)
  local code, why = sibling_refusal(context, local_set, actor)
  if code then return nil, code, why end
  return set_update(set_bound(context, local_set), local_set, actor, sibling)
end
`

const VERSION_ORDER_LUA = `
-- True when the version (ts, dc) supersedes (cur_ts, cur_dc): last writer wins by (ts, dc), as
-- core's version-order.ts; ts strings compare as times. Pure.
local function version_wins(ts, dc, cur_ts, cur_dc)
  return ts > cur_ts or (ts == cur_ts and dc > cur_dc)
end
`

/**
 * The rules of the protocol the scripts apply, as pure Lua functions (see the module comment):
 * `canonical`, `is_hlc`, `hlc_next`, `version_wins`, `set_parse`, `set_encode`, `logged_ok`,
 * `set_sync`, `set_update`, `sibling_refusal` and `sibling_write` (the two together). For the agreement test, which calls them from a
 * script of its own.
 */
export const PROTOCOL_LUA = `
${BOUNDS_LUA}
${HLC_LUA}
${VERSION_ORDER_LUA}
${SIBLINGS_LUA}
`

const VERSION_LUA = `
${VERSION_ORDER_LUA}
-- A stored version: nil when there is none, false when it does not parse (as decodeStoredVersion
-- would refuse it), else its ts and dc.
local function stored_version(vkey, regions)
  local cur = redis.call('HMGET', vkey, 'ts', 'dc', 'v')
  if not cur[1] and not cur[2] and not cur[3] then return nil end
  local dc = canonical(cur[2])
  if not is_hlc(cur[1]) or not dc or dc >= regions or cur[3] == '' then return false end
  return { cur[1], dc }
end
-- Keeps the version with the highest (ts, dc); ts strings compare as times. A stored version
-- that does not parse is replaced only when over_bad (a leader's own write, whose ts is above
-- every ts it has applied, so above whatever the bad one was), else left for the repair.
local function store_version(vkey, regions, ts, dc, has_value, value, over_bad)
  local cur = stored_version(vkey, regions)
  if cur == false and not over_bad then return end
  if cur and not version_wins(ts, dc, cur[1], cur[2]) then return end
  if has_value == '1' then
    redis.call('HSET', vkey, 'ts', ts, 'dc', dc, 'v', value)
  else
    redis.call('HSET', vkey, 'ts', ts, 'dc', dc)
    redis.call('HDEL', vkey, 'v')
  end
end
-- has_value: '1' a value, '0' a tombstone, '2' a sibling write (value = its sibling set), '3' a
-- sibling write whose set is logged but not merged (it does not decode).
local function append_log(lkey, idx, key, ts, at, has_value, value)
  local id = string.format('%d-0', idx)
  if has_value == '1' then
    redis.call('XADD', lkey, id, 'k', key, 'ts', ts, 'at', at, 'v', value)
  elseif has_value == '2' or has_value == '3' then
    redis.call('XADD', lkey, id, 'k', key, 'ts', ts, 'at', at, 's', value)
  else
    redis.call('XADD', lkey, id, 'k', key, 'ts', ts, 'at', at)
  end
end
${SV_LUA}
`

/**
 * Leader heartbeat (causal shipping): the HLC moves past its last value and up to the physical
 * clock, with no entry. KEYS: meta, sv. ARGV: now (ms; '' for the server's TIME), region.
 * Reply: ts, then the local idx (`sv[region]`).
 */
export const HEARTBEAT_SCRIPT = new LuaScript(`#!lua
${HLC_LUA}
local ts = hlc_stamp(KEYS[1], '0000000000000000', ARGV[1])
if not ts then return redis.error_reply('CW_HLC_EXHAUSTED HLC ran out of milliseconds') end
redis.call('HSET', KEYS[1], 'hlc', ts)
return { ts, redis.call('HGET', KEYS[2], ARGV[2]) or '0' }
`)

/**
 * Leader write. KEYS: meta, sv, log(region), version(key).
 * ARGV: region, regions, dt, key, hasValue ('1'|'0'), value, now (ms; '' for the server's TIME),
 * the writer's leader token ('' for none; `epoch-scripts.ts`).
 * Reply: idx, ts, at, then sv[0..regions-1].
 */
export const WRITE_SCRIPT = new LuaScript(`#!lua
${HLC_LUA}
${BOUNDS_LUA}
${VERSION_LUA}
local region = tonumber(ARGV[1])
local regions = tonumber(ARGV[2])
local idx = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0') + 1
if idx > MAX_COUNTER then return redis.error_reply('CW_COUNTER_EXHAUSTED the log idx cannot grow') end
local leader_token = ARGV[8]
${LEADER_CHECK_LUA}
local ts, pc = hlc_stamp(KEYS[1], ARGV[3], ARGV[7])
if not ts then return redis.error_reply('CW_HLC_EXHAUSTED HLC ran out of milliseconds') end
local at = string.format('%d', pc)
append_log(KEYS[3], idx, ARGV[4], ts, at, ARGV[5], ARGV[6])
store_version(KEYS[4], regions, ts, region, ARGV[5], ARGV[6], true)
redis.call('HSET', KEYS[1], 'hlc', ts)
redis.call('HSET', KEYS[2], ARGV[1], string.format('%d', idx))
local reply = { string.format('%d', idx), ts, at }
for _, v in ipairs(sv_publish(KEYS[2], regions)) do reply[#reply + 1] = v end
return reply
`)

/**
 * Leader write of a key in a siblings namespace: as {@link WRITE_SCRIPT}, but the value (or
 * tombstone) becomes a new sibling of the region, superseding what the context covers, and the
 * log entry carries the resulting set. KEYS: meta, sv, log(region), siblings(key).
 * ARGV: region, regions, dt, key, hasValue ('1'|'0'), value, now, context (a sibling set text
 * without siblings: `actor US counter`, entries split by RS), the writer's leader token.
 * Reply: idx, ts, at, the resulting set's text, then sv[0..regions-1].
 */
export const WRITE_SIBLING_SCRIPT = new LuaScript(`#!lua
${HLC_LUA}
${BOUNDS_LUA}
${VERSION_LUA}
${SIBLINGS_LUA}
local region = tonumber(ARGV[1])
local regions = tonumber(ARGV[2])
local context = set_parse(ARGV[8], regions)
if not context then return redis.error_reply('CW_BAD_CONTEXT malformed causal context') end
local local_set = set_parse(redis.call('GET', KEYS[4]), regions)
if not local_set then return redis.error_reply('CW_QUARANTINED the stored sibling set does not decode') end
-- Dots are minted under the region's actor of the current epoch (siblingActor in core).
local actor = (tonumber(redis.call('HGET', KEYS[1], 'epoch') or '1') - 1) * 256 + region
-- Checked before anything is stamped or written (sibling_write's rule); the ts comes below.
local refused, why = sibling_refusal(context, local_set, actor)
if refused then return redis.error_reply(refused .. ' ' .. why) end
local idx = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0') + 1
if idx > MAX_COUNTER then return redis.error_reply('CW_COUNTER_EXHAUSTED the log idx cannot grow') end
local leader_token = ARGV[9]
${LEADER_CHECK_LUA}
local ts, pc = hlc_stamp(KEYS[1], ARGV[3], ARGV[7])
if not ts then return redis.error_reply('CW_HLC_EXHAUSTED HLC ran out of milliseconds') end
local sibling
if ARGV[5] == '1' then sibling = ts .. '=' .. ARGV[6] else sibling = ts .. '-' end
local set_text = set_encode(set_update(set_bound(context, local_set), local_set, actor, sibling))
local at = string.format('%d', pc)
append_log(KEYS[3], idx, ARGV[4], ts, at, '2', set_text)
redis.call('SET', KEYS[4], set_text)
redis.call('HSET', KEYS[1], 'hlc', ts)
redis.call('HSET', KEYS[2], ARGV[1], string.format('%d', idx))
local reply = { string.format('%d', idx), ts, at, set_text }
for _, v in ipairs(sv_publish(KEYS[2], regions)) do reply[#reply + 1] = v end
return reply
`)

/** Fields per entry in {@link INGEST_SCRIPT}'s ARGV. */
export const INGEST_FIELDS = 7

/**
 * Shipped (`receive`) or replicated (`apply`) entries. KEYS: meta, sv, then for each entry its
 * origin's log and its version key (its siblings key for a sibling write). ARGV: mode ('batch': a
 * gap stops the whole batch; 'per-origin': a gap stops only that origin), regions, n, then per
 * entry origin, idx, key, hasValue ('1' value, '0' tombstone, '2' sibling write whose value is
 * its set, '3' one whose set is logged but not merged), value, ts, at. Entries at or below
 * `sv[origin]` are skipped; a sibling write's set is merged (`sync`) into the key's, unless either
 * does not parse (see the module comment). Advances the HLC to at least each applied entry's ts.
 * Reply: sv[0..regions-1], then the position (0-based) of each applied entry whose own set was
 * logged without being merged because it does not parse.
 */
export const INGEST_SCRIPT = new LuaScript(`#!lua
${BOUNDS_LUA}
${VERSION_LUA}
${SIBLINGS_LUA}
local stop_all = ARGV[1] == 'batch'
local regions = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
-- Parse every shipped set, and the stored sets they merge into, before the first write: a
-- script error does not roll back. A set that does not parse is false: logged, never merged.
local shipped, sets, set_keys = {}, {}, {}
for i = 0, n - 1 do
  local a = 4 + i * ${INGEST_FIELDS}
  if ARGV[a + 3] == '2' then
    local set = set_parse(ARGV[a + 4], regions)
    if set and logged_ok(set, tonumber(ARGV[a]), ARGV[a + 5]) then shipped[i] = set else shipped[i] = false end
    local skey = KEYS[4 + i * 2]
    if sets[skey] == nil then
      sets[skey] = set_parse(redis.call('GET', skey), regions) or false
      set_keys[#set_keys + 1] = skey
    end
  end
end
local merged = {}
local unmerged = {}
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
      if shipped[i] ~= nil then
        local skey = KEYS[4 + i * 2]
        if shipped[i] and sets[skey] then
          sets[skey] = set_sync(sets[skey], shipped[i])
          merged[skey] = true
        elseif not shipped[i] then
          unmerged[#unmerged + 1] = tostring(i)
        end
      elseif ARGV[a + 3] == '3' then
        unmerged[#unmerged + 1] = tostring(i)
      else
        store_version(KEYS[4 + i * 2], regions, ts, tonumber(origin), ARGV[a + 3], ARGV[a + 4], false)
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
local reply
if #touched > 0 then reply = sv_publish(KEYS[2], regions) else reply = sv_list(KEYS[2], regions) end
for _, i in ipairs(unmerged) do reply[#reply + 1] = i end
return reply
`)

/**
 * One page of a key's entries in one origin's log, for a repair (`quarantine.ts`); runs on
 * replicas. KEYS: log(origin). ARGV: key, afterIdx, count.
 * Reply: the last idx looked at (afterIdx when none), '1' when the page was full (more may
 * follow) else '0', then per entry of the key: idx, ts, kind ('s' sibling write, 'v' value, 't'
 * tombstone, 'b' set write), its text (set, value, or '').
 */
export const SCAN_LOG_SCRIPT = new LuaScript(`#!lua flags=no-writes
local count = tonumber(ARGV[3])
local rows = redis.call('XRANGE', KEYS[1], '(' .. ARGV[2] .. '-0', '+', 'COUNT', count)
local last = ARGV[2]
local reply = { last, '0' }
for _, row in ipairs(rows) do
  local id, f = row[1], row[2]
  last = string.sub(id, 1, string.find(id, '-', 1, true) - 1)
  local fields = {}
  for i = 1, #f, 2 do fields[f[i]] = f[i + 1] end
  if fields.k == ARGV[1] then
    local kind, text = 't', ''
    if fields.s then kind, text = 's', fields.s
    elseif fields.b then kind, text = 'b', ''
    elseif fields.v then kind, text = 'v', fields.v end
    reply[#reply + 1] = last
    reply[#reply + 1] = fields.ts or ''
    reply[#reply + 1] = kind
    reply[#reply + 1] = text
  end
end
reply[1] = last
if #rows == count then reply[2] = '1' end
return reply
`)

/**
 * Puts back a key whose stored value does not decode, as rebuilt from the log (`quarantine.ts`):
 * only if the stored value is still the one the rebuild started from, and with the entries of the
 * key logged since the rebuild's scan merged in. KEYS: the key's siblings or version key, then
 * log(0..regions-1). ARGV: kind ('s' sibling set, 'v' version), regions, key, the stored text the
 * rebuild saw (for a version: ts US dc US v, fields as stored, absent ones empty), the rebuilt
 * value (a set's text; a version as hasValue US ts US dc US value, or '' for none), then per
 * origin the last idx the scan looked at.
 * Reply: 'repaired', or 'changed' when the stored value moved on meanwhile.
 */
export const REPAIR_SCRIPT = new LuaScript(`#!lua
${BOUNDS_LUA}
${VERSION_LUA}
${SIBLINGS_LUA}
local kind = ARGV[1]
local regions = tonumber(ARGV[2])
local key = ARGV[3]
local function entries_since(d)
  return redis.call('XRANGE', KEYS[2 + d], '(' .. ARGV[6 + d] .. '-0', '+')
end
local function fields_of(row)
  local fields = {}
  for i = 1, #row[2], 2 do fields[row[2][i]] = row[2][i + 1] end
  return fields
end
if kind == 's' then
  if (redis.call('GET', KEYS[1]) or '') ~= ARGV[4] then return 'changed' end
  local set = set_parse(ARGV[5], regions)
  if not set then return redis.error_reply('CW_BAD_SET the rebuilt set does not decode') end
  for d = 0, regions - 1 do
    for _, row in ipairs(entries_since(d)) do
      local f = fields_of(row)
      if f.k == key and f.s then
        local logged = set_parse(f.s, regions)
        if logged and logged_ok(logged, d, f.ts) then set = set_sync(set, logged) end
      end
    end
  end
  if #set == 0 then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], set_encode(set)) end
  return 'repaired'
end
local cur = redis.call('HMGET', KEYS[1], 'ts', 'dc', 'v')
if table.concat({ cur[1] or '', cur[2] or '', cur[3] or '' }, '\\31') ~= ARGV[4] then return 'changed' end
local best = nil
if ARGV[5] ~= '' then best = split(ARGV[5], '\\31') end
for d = 0, regions - 1 do
  for _, row in ipairs(entries_since(d)) do
    local f = fields_of(row)
    if f.k == key and not f.s and not f.b and is_hlc(f.ts) then
      if not best or version_wins(f.ts, d, best[2], tonumber(best[3])) then
        if f.v then best = { '1', f.ts, tostring(d), f.v } else best = { '0', f.ts, tostring(d), '' } end
      end
    end
  end
end
redis.call('DEL', KEYS[1])
if best then
  if best[1] == '1' then
    redis.call('HSET', KEYS[1], 'ts', best[2], 'dc', best[3], 'v', best[4])
  else
    redis.call('HSET', KEYS[1], 'ts', best[2], 'dc', best[3])
  end
end
return 'repaired'
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
-- Any field makes a stored version, whole or not: TypeScript checks it (and quarantines a bad one).
if v[1] or v[2] or v[3] then
  if v[3] then reply = { '1', v[1] or '', v[2] or '', '1', v[3] } else reply = { '1', v[1] or '', v[2] or '', '0', '' } end
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
