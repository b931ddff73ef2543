/**
 * The Lua scripts of a Redis partition replica's epochs (`@causeway/core`'s `epoch-history.ts`;
 * the design is in `docs/failover.md`): the epoch history of each origin region, the leader
 * claim that starts a new epoch, the reserved index ceiling that keeps a new epoch above every
 * index an old leader may have issued, and the admission of a shipped envelope against what this
 * replica already holds of its origin.
 *
 * Keys (`key-layout.ts`): `<prefix>meta` gains `leader` (the run id of the server process that
 * claimed the current epoch), `leaderAddr` (its address), `ceiling` (the highest index a write
 * may take now) and `reserved` (the highest index a majority of the region's replicas know may
 * have been taken: a new leader starts above it); `<prefix>sv:epochs` holds each origin's history
 * as text (`encodeHistory`: `epoch:first[:last];...`), and `<prefix>sv:diverged` what the
 * replica noticed about an origin whose envelopes disagreed with it. Both start with the `sv`
 * key's name, so the invalidation pushes that track `sv` (`redis-partition-replica.ts`) fire for
 * them too. Everything here is in the leader's dataset, so Redis replication carries it to the
 * followers with the entries, in order.
 */
import { LuaScript } from './lua-script.js'

/** Epoch histories as text, parsed into `{ epoch, first, last|nil }` lists. Pure functions. */
export const HISTORY_LUA = `
local function hist_parse(text)
  if not text or text == '' then return { { 1, 1, nil } } end
  local spans = {}
  for part in string.gmatch(text, '[^;]+') do
    local e, f, l = string.match(part, '^(%d+):(%d+):?(%d*)$')
    local last = nil
    if l ~= '' then last = tonumber(l) end
    spans[#spans + 1] = { tonumber(e), tonumber(f), last }
  end
  return spans
end
local function hist_encode(spans)
  local parts = {}
  for i, s in ipairs(spans) do
    if s[3] then parts[i] = string.format('%d:%d:%d', s[1], s[2], s[3])
    else parts[i] = string.format('%d:%d', s[1], s[2]) end
  end
  return table.concat(parts, ';')
end
-- historyExtends: every epoch of mine is in theirs with the same first (and last, once ended).
local function hist_extends(mine, theirs)
  for _, s in ipairs(mine) do
    local found = nil
    for _, o in ipairs(theirs) do if o[1] == s[1] then found = o end end
    if not found or found[2] ~= s[2] then return false end
    if s[3] and found[3] ~= s[3] then return false end
  end
  return theirs[#theirs][1] >= mine[#mine][1]
end
-- lastKeptBefore: the highest index below idx the history keeps (0 when none).
local function hist_kept_before(spans, idx)
  local kept = 0
  for i, s in ipairs(spans) do
    if s[2] >= idx then break end
    local nxt = spans[i + 1]
    local e = s[3]
    if not e then if nxt then e = nxt[2] - 1 else e = idx - 1 end end
    if e > idx - 1 then e = idx - 1 end
    if e >= s[2] then kept = e end
  end
  return kept
end
`

/** The run id of the server process running the script (new on every start of the process). */
export const RUN_ID_LUA = `
local function run_id()
  return string.match(redis.call('INFO', 'server'), 'run_id:(%w+)')
end
`

/**
 * The fence of a leader write, for a script whose `KEYS[1]` is the meta hash, whose new index is
 * in `idx` and whose caller's claim is in `leader_token` (the run id of the server process the
 * writer believes holds the claim; '' for a replica used on its own, as the tests do): a write
 * is refused (`CW_NOT_LEADER`) unless the store's claim is that process's and this is that
 * process (a server that restarted, with its data, cut short or wiped, is another process, whose
 * claim a gateway has not checked), and (`CW_CEILING`) above the reserved `ceiling`. A store
 * written without a token has neither check.
 */
export const LEADER_CHECK_LUA = `
${RUN_ID_LUA}
if leader_token ~= '' then
  local claim = redis.call('HMGET', KEYS[1], 'leader', 'ceiling')
  if claim[1] ~= leader_token or run_id() ~= leader_token then
    return redis.error_reply('CW_NOT_LEADER this server does not hold the claim the write was sent under')
  end
  if claim[2] and idx > tonumber(claim[2]) then
    return redis.error_reply('CW_CEILING index ' .. string.format('%d', idx) .. ' is above the reserved ceiling ' .. claim[2])
  end
end
`

/**
 * `sv` and every origin's history, atomically; runs on replicas. KEYS: sv, sv:epochs, meta.
 * ARGV: regions. Reply: sv[0..D-1], then history text per origin ('' when none), then the meta
 * fields epoch, leader, leaderAddr, ceiling, reserved ('' when unset).
 */
export const STATE_SCRIPT = new LuaScript(`#!lua flags=no-writes
local regions = tonumber(ARGV[1])
local reply = {}
for d = 0, regions - 1 do reply[#reply + 1] = redis.call('HGET', KEYS[1], tostring(d)) or '0' end
for d = 0, regions - 1 do reply[#reply + 1] = redis.call('HGET', KEYS[2], tostring(d)) or '' end
local m = redis.call('HMGET', KEYS[3], 'epoch', 'leader', 'leaderAddr', 'ceiling', 'reserved')
for i = 1, 5 do reply[#reply + 1] = m[i] or '' end
return reply
`)

/**
 * A server process claims the leadership of its partition in its region: the start of a new
 * epoch. KEYS: meta, sv, sv:epochs. ARGV: region, run id, address, the highest epoch seen on any
 * replica of the partition ('0' for none), the lowest first index the new epoch may have (one
 * above the highest index or reserved ceiling seen on any replica).
 *
 * Already claimed by this run id: nothing changes ('held'). A store that never had a leader, an
 * entry or an epoch: epoch 1 from index 1. Otherwise the current epoch ends at this replica's
 * `sv[region]` (every entry it holds stays) and the next one starts above everything reserved,
 * so no index an earlier leader may have issued is issued again: `sv[region]` jumps to just below
 * it, and the ceiling stays there until the writer reserves more (RAISE_SCRIPT).
 * Reply: 'held' or 'claimed', the history text.
 */
export const CLAIM_SCRIPT = new LuaScript(`#!lua
${HISTORY_LUA}
local region = ARGV[1]
local meta = redis.call('HMGET', KEYS[1], 'leader', 'epoch', 'ceiling', 'reserved')
local stored = redis.call('HGET', KEYS[3], region)
if meta[1] == ARGV[2] then return { 'held', stored or '1:1' } end
local own = tonumber(redis.call('HGET', KEYS[2], region) or '0')
local reserved = math.max(tonumber(meta[3] or '0'), tonumber(meta[4] or '0'), own)
local min_epoch = tonumber(ARGV[4])
local min_first = tonumber(ARGV[5])
local text, first
if not meta[1] and not stored and reserved == 0 and min_epoch == 0 and min_first <= 1 then
  text = '1:1'
  first = 1
  redis.call('HSET', KEYS[1], 'epoch', '1')
else
  local spans = hist_parse(stored)
  local cur = spans[#spans]
  local epoch = math.max(cur[1], tonumber(meta[2] or '1'), min_epoch) + 1
  first = math.max(reserved + 1, min_first)
  cur[3] = math.max(cur[2] - 1, own)
  spans[#spans + 1] = { epoch, first, nil }
  text = hist_encode(spans)
  redis.call('HSET', KEYS[1], 'epoch', string.format('%d', epoch))
end
local below = string.format('%d', first - 1)
redis.call('HSET', KEYS[3], region, text)
redis.call('HSET', KEYS[2], region, below)
redis.call('HSET', KEYS[1], 'leader', ARGV[2], 'leaderAddr', ARGV[3], 'ceiling', below, 'reserved', below)
return { 'claimed', text }
`)

/**
 * Moves the index ceiling up, in two steps: 'reserve' records `reserved = max(reserved, target)`
 * (the writer then waits for a majority of replicas to have it), 'confirm' lets writes go up to
 * it (`ceiling = max(ceiling, target)`, never above `reserved`). Only on the claimed leader
 * (ARGV run id). KEYS: meta. ARGV: phase, target, run id.
 * Reply: the ceiling and reserved after it; an error when this is not the claimed leader.
 */
export const RAISE_SCRIPT = new LuaScript(`#!lua
${RUN_ID_LUA}
local m = redis.call('HMGET', KEYS[1], 'leader', 'ceiling', 'reserved')
if m[1] ~= ARGV[3] or run_id() ~= ARGV[3] then return redis.error_reply('CW_NOT_LEADER this server does not hold the claim') end
local target = tonumber(ARGV[2])
local ceiling = tonumber(m[2] or '0')
local reserved = tonumber(m[3] or '0')
if ARGV[1] == 'reserve' and target > reserved then
  reserved = target
  redis.call('HSET', KEYS[1], 'reserved', string.format('%d', reserved))
elseif ARGV[1] == 'confirm' and target > ceiling then
  ceiling = math.min(target, reserved)
  redis.call('HSET', KEYS[1], 'ceiling', string.format('%d', ceiling))
end
return { string.format('%d', ceiling), string.format('%d', reserved) }
`)

/**
 * Admits a shipped envelope of origin `from` before its entries are ingested (`receive`).
 * KEYS: sv, sv:epochs, log(from), sv:diverged. ARGV: from, the sender's history text ('' for a
 * version 1 envelope, which says nothing of epochs), the envelope's first idx, then idx and ts of
 * each entry.
 *
 * - The sender's history must extend the one this replica learned of `from` (else 'diverged');
 * - an entry this replica already holds (idx <= sv[from]) must be the same write (same ts; else
 *   'diverged'): a sender that lost entries and issued their indexes again is caught here;
 * - an envelope that starts a new epoch above a lost range follows on from the last index the
 *   sender kept: when this replica holds at least that, `sv[from]` moves to just below the
 *   envelope's first index (there is nothing in between to wait for), and if it holds more (the
 *   sender lost entries this replica received) that is recorded as 'extra' in sv:diverged.
 *
 * Then the sender's history is stored as this replica's knowledge of `from`, and a 'diverged'
 * note of `from` is cleared (the link resumes).
 * Reply: 'ok' or 'diverged', then a reason ('' when ok), then sv[from].
 */
export const ADMIT_SCRIPT = new LuaScript(`#!lua
${HISTORY_LUA}
local from = ARGV[1]
local cur = tonumber(redis.call('HGET', KEYS[1], from) or '0')
local stored = redis.call('HGET', KEYS[2], from)
local theirs = nil
local function refuse(why)
  redis.call('HSET', KEYS[4], from, 'diverged ' .. why)
  return { 'diverged', why, string.format('%d', cur) }
end
if ARGV[2] ~= '' then
  theirs = hist_parse(ARGV[2])
  if not hist_extends(hist_parse(stored), theirs) then
    return refuse('the sender history ' .. ARGV[2] .. ' does not extend the one held here, ' .. (stored or '1:1'))
  end
end
local first = tonumber(ARGV[3])
for i = 4, #ARGV - 1, 2 do
  local idx = tonumber(ARGV[i])
  if idx > cur then break end
  local rows = redis.call('XRANGE', KEYS[3], ARGV[i] .. '-0', ARGV[i] .. '-0')
  local ts = nil
  if rows[1] then
    local f = rows[1][2]
    for k = 1, #f, 2 do if f[k] == 'ts' then ts = f[k + 1] end end
  end
  if ts ~= ARGV[i + 1] then
    return refuse('entry ' .. ARGV[i] .. ' of region ' .. from .. ' is ' .. (ts or 'absent') .. ' here but ' .. ARGV[i + 1] .. ' at the sender')
  end
end
if theirs and first > cur + 1 then
  local kept = hist_kept_before(theirs, first)
  if kept <= cur then
    if kept < cur then
      redis.call('HSET', KEYS[4], from, 'extra ' .. string.format('%d..%d', kept + 1, cur) ..
        ' of region ' .. from .. ' are held here but were lost at the origin')
    end
    cur = first - 1
    redis.call('HSET', KEYS[1], from, string.format('%d', cur))
  end
end
if theirs then redis.call('HSET', KEYS[2], from, ARGV[2]) end
local note = redis.call('HGET', KEYS[4], from)
if note and string.sub(note, 1, 9) == 'diverged ' then redis.call('HDEL', KEYS[4], from) end
return { 'ok', '', string.format('%d', cur) }
`)
