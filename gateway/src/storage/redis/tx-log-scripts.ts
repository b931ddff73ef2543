/**
 * The Lua scripts of a region's transaction log on Redis (`redis-tx-log.ts`). Keys, all under
 * `cw:{<namespace>:tx:r<region>}:` (one hash slot):
 *
 * | key      | type   | holds                                                                 |
 * |----------|--------|-----------------------------------------------------------------------|
 * | `meta`   | hash   | `last` (tid appended), `hlc`, `applied` (watermark), `f:<d>` (region `d`'s checkpoint) |
 * | `log`    | stream | a record per tid, id `<tid>-0`: `ts`, `at`, `s` (snapshot), `r` (reads, JSON), `w` (writes), `f` (a foreign one's `[region, tid, parts]`, JSON) |
 * | `out`    | stream | an outcome per tid, id `<tid>-0`: `o` (`a` applied, `c` conflict), `ts`, `p` (parts, JSON) |
 * | `om:`, `or:`, `oz:<tenant>:<client>` | hash, hash, zset | a commit op-id client's mark, records and their seqs (`op-scripts.ts`) |
 * | `snap`   | hash   | by gateway process: its oldest open snapshot and when it said so      |
 * | `lease`  | string | the applier's lease (`cluster/shipping-lease.ts`'s `RedisLease`)      |
 * | `wait`   | string | a counter an append's `WAIT` bumps                                    |
 *
 * The tid and the ts are stamped in the script that appends, so they grow together whichever
 * gateway appends.
 */
import { LuaScript } from './lua-script.js'
import { OP_LOOKUP_LUA, OP_RECORD_LUA } from './op-scripts.js'

const HLC_LUA = `
local function hlc_parse(h)
  if not h then return 0, 0 end
  return tonumber(string.sub(h, 1, 12), 16), tonumber(string.sub(h, 13, 16), 16)
end
local function hlc_next(last, dt, pc)
  local lp, cp = hlc_parse(last)
  local tl, tc = hlc_parse(dt)
  local l = math.max(lp, pc, tl)
  local c
  if l == lp and l == tl then c = math.max(cp, tc) + 1
  elseif l == lp then c = cp + 1
  elseif l == tl then c = tc + 1
  else c = 0 end
  if c > 65535 then l = l + 1; c = 0 end
  if l > 281474976710655 then return nil end
  return string.format('%012x%04x', l, c)
end
local function physical(now_arg)
  if now_arg ~= '' then return tonumber(now_arg) end
  local now = redis.call('TIME')
  return tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
end
`

/** First element of the reply of an append whose operation id was committed before. */
export const TX_REPLAY = 'CW_REPLAY'
/** First element of the reply of an append whose operation id is below its client's mark. */
export const TX_EXPIRED = 'CW_OP_EXPIRED'

/**
 * A commit. KEYS: meta, log, and with an operation id its client's mark, records and seqs
 * (`op-scripts.ts`). ARGV: dt, now ('' for TIME), snapshot, reads (JSON), writes, and with an
 * operation: fingerprint, seq, retention ms, records kept. Reply: tid, ts, at; or `CW_REPLAY` and
 * the stored record; or `CW_OP_EXPIRED` and the client's mark.
 */
export const APPEND_SCRIPT = appendScript(false)
/** {@link APPEND_SCRIPT} with an operation id. */
export const APPEND_OP_SCRIPT = appendScript(true)

function appendScript(withOp: boolean): LuaScript {
  return new LuaScript(`#!lua
${HLC_LUA}
local pc = physical(ARGV[2])
local op_now = pc
${withOp ? OP_LOOKUP_LUA : ''}
local ts = hlc_next(redis.call('HGET', KEYS[1], 'hlc'), ARGV[1], pc)
if not ts then return redis.error_reply('CW_HLC_EXHAUSTED HLC ran out of milliseconds') end
local tid = redis.call('HINCRBY', KEYS[1], 'last', 1)
local at = string.format('%d', pc)
redis.call('XADD', KEYS[2], string.format('%d-0', tid), 'ts', ts, 'at', at, 's', ARGV[3], 'r', ARGV[4], 'w', ARGV[5])
redis.call('HSET', KEYS[1], 'hlc', ts)
${
  withOp
    ? `local op_record = table.concat({ op_fp, string.format('%d', tid), ts, '1', at, '' }, '\\31')
${OP_RECORD_LUA}`
    : ''
}
return { string.format('%d', tid), ts, at }
`)
}

/**
 * Another region's transaction, unless the log has it. KEYS: meta, log. ARGV: region, its tid,
 * ts, foreign (JSON `[region, tid, parts]`), writes, now. Reply: the region's checkpoint, then the
 * tid appended ('' when it was there).
 */
export const APPEND_FOREIGN_SCRIPT = new LuaScript(`#!lua
${HLC_LUA}
local field = 'f:' .. ARGV[1]
local checkpoint = tonumber(redis.call('HGET', KEYS[1], field) or '0')
if tonumber(ARGV[2]) <= checkpoint then return { string.format('%d', checkpoint), '' } end
local tid = redis.call('HINCRBY', KEYS[1], 'last', 1)
local at = string.format('%d', physical(ARGV[6]))
redis.call('XADD', KEYS[2], string.format('%d-0', tid), 'ts', ARGV[3], 'at', at, 's', '0', 'r', '[]', 'w', ARGV[5], 'f', ARGV[4])
local hlc = redis.call('HGET', KEYS[1], 'hlc') or '0000000000000000'
if ARGV[3] > hlc then redis.call('HSET', KEYS[1], 'hlc', ARGV[3]) end
redis.call('HSET', KEYS[1], field, ARGV[2])
return { ARGV[2], string.format('%d', tid) }
`)

/**
 * Outcomes, in tid order, each the one after the watermark (another applier that got ahead is
 * refused). KEYS: meta, out. ARGV: n, then per outcome tid, outcome ('a'|'c'), ts, parts (JSON).
 * Reply: the watermark.
 */
export const RECORD_SCRIPT = new LuaScript(`#!lua
local applied = tonumber(redis.call('HGET', KEYS[1], 'applied') or '0')
local n = tonumber(ARGV[1])
if tonumber(ARGV[2]) ~= applied + 1 then
  return redis.error_reply('CW_OUT_OF_ORDER outcome ' .. ARGV[2] .. ' does not follow ' .. applied)
end
for i = 0, n - 1 do
  local a = 2 + i * 4
  redis.call('XADD', KEYS[2], ARGV[a] .. '-0', 'o', ARGV[a + 1], 'ts', ARGV[a + 2], 'p', ARGV[a + 3])
  applied = tonumber(ARGV[a])
end
redis.call('HSET', KEYS[1], 'applied', string.format('%d', applied))
return string.format('%d', applied)
`)
