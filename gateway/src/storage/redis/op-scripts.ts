/**
 * The leader write scripts of a Redis replica with an operation record (`../op-records.ts`): each
 * is the write script itself, wrapped so that one script (one atomic step, replicated to the
 * followers as one MULTI/EXEC) first looks the operation up and, when it is new, runs the write
 * and stores the record with a `PX` expiry of the retention window. A known operation writes
 * nothing and answers `CW_REPLAY` and its record.
 *
 * The wrapped script keeps its own KEYS and ARGV: the record key is appended to KEYS and the
 * fingerprint and the window (ms) to ARGV, after everything the write script reads. Every write
 * script answers its log idx, ts and at in a row (at `idxAt`), a sibling write its key's set too
 * (at `setAt`), which is where the record's dot comes from.
 */
import { CausewayError } from '@causeway/core'
import { type OpRecord, decodeOpRecord } from '../op-records.js'
import { LuaScript } from './lua-script.js'
import { SET_WRITE_SCRIPT } from './set-scripts.js'
import { WRITE_SCRIPT, WRITE_SIBLING_SCRIPT } from './replica-scripts.js'

/** The record key, fingerprint and window a write with an operation id adds to its script. */
export interface RedisOpArgs {
  key: string
  fingerprint: string
  retentionMs: number
}

/** First element of the reply of a wrapped script whose operation was already applied. */
export const REPLAY = 'CW_REPLAY'

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
local op_key = KEYS[#KEYS]
local stored = redis.call('GET', op_key)
if stored then return { '${REPLAY}', stored } end
local reply = cw_write()
if type(reply) ~= 'table' or reply.err or reply[1] == 'RETRY' then return reply end
local dot = ''${dot}
local epoch = redis.call('HGET', KEYS[1], 'epoch') or '1'
local record = table.concat({ ARGV[#ARGV - 1], reply[${idxAt}], reply[${idxAt + 1}], epoch, reply[${idxAt + 2}], dot }, '\\31')
redis.call('SET', op_key, record, 'PX', ARGV[#ARGV])
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
  return { keys: [op.key], args: [op.fingerprint, String(op.retentionMs)] }
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

/** Throws {@link OpReplayed} when `reply` is a replay's; returns otherwise. */
export function throwIfReplayed(reply: readonly unknown[]): void {
  if (String(reply[0]) !== REPLAY) return
  const record = decodeOpRecord(String(reply[1]))
  if (record === undefined)
    throw new CausewayError('BACKEND_UNAVAILABLE', 'a stored operation record does not decode')
  throw new OpReplayed(record)
}
