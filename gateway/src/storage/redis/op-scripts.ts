/**
 * The leader write scripts of a Redis replica with an operation record (`../op-records.ts` has
 * the rule): each is the write script itself, wrapped so that one script (one atomic step,
 * replicated to the followers as one MULTI/EXEC) first looks the operation up and, when it is
 * new, runs the write and stores the record. A known operation writes nothing and answers
 * `CW_REPLAY` and its record; one at or below its client's mark, `CW_OP_EXPIRED` and the mark.
 *
 * The client's keys (`key-layout.ts`): its mark (a hash: `low`, `high`, `seen`; never expires),
 * its records (a hash by seq) and their seqs (a sorted set, to drop the lowest past the window).
 * Records and seqs expire after the retention window (`PEXPIRE` at each write), which is also
 * when an idle client's `low` counts as its `high`: an idle client keeps only its mark.
 *
 * The wrapped script keeps its own KEYS and ARGV: the three keys are appended to KEYS and the
 * fingerprint, seq, window (ms) and records kept to ARGV, after everything the write script
 * reads. Every write script answers its log idx, ts and at in a row (at `idxAt`), a sibling write
 * its key's set too (at `setAt`), which is where the record's dot comes from.
 */
import { CausewayError } from '@causeway/core'
import { type OpRecord, decodeOpRecord } from '../op-records.js'
import { LuaScript } from './lua-script.js'
import { SET_WRITE_SCRIPT } from './set-scripts.js'
import { WRITE_SCRIPT, WRITE_SIBLING_SCRIPT } from './replica-scripts.js'

/** The client's keys and what a write with an operation id adds to its script. */
export interface RedisOpArgs {
  /** The client's mark, records and seqs (`RedisKeyLayout.opClient`). */
  keys: readonly [mark: string, records: string, seqs: string]
  fingerprint: string
  seq: number
  retentionMs: number
  window: number
}

/** First element of the reply of a wrapped script whose operation was already applied. */
export const REPLAY = 'CW_REPLAY'
/** First element of the reply of a wrapped script whose operation is below its client's mark. */
export const EXPIRED = 'CW_OP_EXPIRED'

/**
 * Lua: looks the operation up (`op_*` locals from the last 3 KEYS and 4 ARGV; `op_now` must be
 * set): returns early with a replay or an expiry, else leaves `op_low` for {@link OP_RECORD_LUA}.
 */
export const OP_LOOKUP_LUA = `
local op_mark, op_recs, op_seqs = KEYS[#KEYS - 2], KEYS[#KEYS - 1], KEYS[#KEYS]
local op_fp, op_seq_text = ARGV[#ARGV - 3], ARGV[#ARGV - 2]
local op_seq, op_keep, op_window = tonumber(op_seq_text), tonumber(ARGV[#ARGV - 1]), tonumber(ARGV[#ARGV])
local op_m = redis.call('HMGET', op_mark, 'low', 'high', 'seen')
local op_low, op_high, op_seen = tonumber(op_m[1] or '0'), tonumber(op_m[2] or '0'), tonumber(op_m[3] or '0')
local op_idle = op_high > 0 and op_now - op_seen >= op_keep
if op_idle then op_low = math.max(op_low, op_high) end
if op_seq > op_low then
  local stored = redis.call('HGET', op_recs, op_seq_text)
  if stored then return { '${REPLAY}', stored } end
end
if op_seq <= op_low then return { '${EXPIRED}', string.format('%d', op_low) } end
`

/**
 * Lua: stores the record `op_record` (after {@link OP_LOOKUP_LUA} and the write), drops what
 * leaves the window and moves the mark.
 */
export const OP_RECORD_LUA = `
if op_idle then redis.call('DEL', op_recs, op_seqs) end
redis.call('HSET', op_recs, op_seq_text, op_record)
redis.call('ZADD', op_seqs, op_seq, op_seq_text)
while redis.call('ZCARD', op_seqs) > op_window do
  local popped = redis.call('ZPOPMIN', op_seqs)
  redis.call('HDEL', op_recs, popped[1])
  op_low = math.max(op_low, tonumber(popped[2]))
end
redis.call('HSET', op_mark, 'low', string.format('%d', op_low), 'high', string.format('%d', math.max(op_high, op_seq)), 'seen', string.format('%d', op_now))
redis.call('PEXPIRE', op_recs, op_keep)
redis.call('PEXPIRE', op_seqs, op_keep)
`

function withOpRecord(base: LuaScript, idxAt: number, setAt?: number): LuaScript {
  const body = base.lua.replace(/^#!lua[^\n]*\n/, '')
  const dot =
    setAt === undefined
      ? ''
      : `
  local mine = string.format('%d', (tonumber(redis.call('HGET', KEYS[1], 'epoch') or '1') - 1) * 256 + tonumber(ARGV[1]))
  for part in string.gmatch(reply[${setAt}], '[^\\30]+') do
    local actor, counter = string.match(part, '^(%d+)\\31(%d+)')
    if actor and actor == mine then dot = counter end
  end`
  return new LuaScript(`#!lua
local function cw_write()
${body}
end
local op_time = redis.call('TIME')
local op_now = tonumber(op_time[1]) * 1000 + math.floor(tonumber(op_time[2]) / 1000)
${OP_LOOKUP_LUA}
local reply = cw_write()
if type(reply) ~= 'table' or reply.err or reply[1] == 'RETRY' then return reply end
local dot = ''${dot}
local epoch = redis.call('HGET', KEYS[1], 'epoch') or '1'
local op_record = table.concat({ op_fp, reply[${idxAt}], reply[${idxAt + 1}], epoch, reply[${idxAt + 2}], dot }, '\\31')
${OP_RECORD_LUA}
return reply
`)
}

/** {@link WRITE_SCRIPT} with an operation record. */
export const WRITE_OP_SCRIPT = withOpRecord(WRITE_SCRIPT, 1)
/** {@link WRITE_SIBLING_SCRIPT} with an operation record. */
export const WRITE_SIBLING_OP_SCRIPT = withOpRecord(WRITE_SIBLING_SCRIPT, 1, 4)
/** `SET_WRITE_SCRIPT` (a set write) with an operation record. */
export const SET_WRITE_OP_SCRIPT = withOpRecord(SET_WRITE_SCRIPT, 2)

/** The keys and arguments a wrapped script takes after its base script's. */
export function opScriptArgs(op: RedisOpArgs): { keys: string[]; args: string[] } {
  return {
    keys: [...op.keys],
    args: [op.fingerprint, String(op.seq), String(op.retentionMs), String(op.window)],
  }
}

/**
 * Thrown (inside the replica only) when a wrapped script found its operation applied already;
 * `writeOnce` turns it into the outcome.
 */
export class OpReplayed extends Error {
  constructor(readonly record: OpRecord) {
    super('operation already applied')
  }
}

/** Thrown (inside the replica only) when a wrapped script found its operation below the mark. */
export class OpBelowMark extends Error {
  constructor(readonly low: number) {
    super('operation below its client mark')
  }
}

/** Throws {@link OpReplayed} or {@link OpBelowMark} when `reply` says so; returns otherwise. */
export function throwIfReplayed(reply: readonly unknown[]): void {
  const head = String(reply[0])
  if (head === EXPIRED) throw new OpBelowMark(Number(reply[1]))
  if (head !== REPLAY) return
  const record = decodeOpRecord(String(reply[1]))
  if (record === undefined)
    throw new CausewayError('BACKEND_UNAVAILABLE', 'a stored operation record does not decode')
  throw new OpReplayed(record)
}
