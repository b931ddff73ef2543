/**
 * The check every log entry passes before a replica takes it: a follower applying its leader's
 * log, a leader receiving another region's shipped entries (`ship-envelope.ts`). Field by field,
 * so an entry that could not be stored, ordered or shipped on is refused up front, and the batch
 * it came in is applied not at all.
 *
 * What an entry carries is checked where it is used: a sibling set by `decodeSiblingSet` when it
 * is merged (an entry whose set does not decode is logged but not merged, and reported), a set
 * delta by the set replica.
 */
import { isRegionId, isSafeCounter, withoutNegativeZero } from './counter-bounds.js'
import { CausewayError } from './errors.js'
import { isHlc } from './hlc.js'
import {
  LOG_ENTRY_KINDS,
  type LogEntry,
  type LogEntryHead,
  type LogEntryKind,
  deleteEntry,
  isLogEntryKind,
  putEntry,
  setOpEntry,
  siblingsEntry,
} from './log-entry.js'

// The latest wall-clock ms an HLC can carry (48 bits); `at` is such a reading.
const MAX_MILLIS = 2 ** 48 - 1

// The body field each kind carries (none for a delete).
const BODY_OF = {
  put: 'value',
  delete: undefined,
  siblings: 'siblings',
  'set-op': 'setDelta',
} as const
const BODIES = ['value', 'siblings', 'setDelta'] as const

/**
 * Checks one entry of a cluster of `regions` regions and returns it as a frozen {@link LogEntry}
 * holding its kind's fields only: a `kind` this version knows, `origin` a region id, `idx` in
 * `1..MAX_SAFE_COUNTER`, a non-empty key of well-formed Unicode, `ts` an HLC, `at` a wall-clock
 * reading in ms, and exactly the body of its kind (a non-empty `value` for a put, a `siblings` or
 * `setDelta` text, nothing for a delete). An entry that is frozen already is returned as it is.
 * @throws `CausewayError('UNSUPPORTED_LOG_FORMAT')` for a kind this version does not know (a newer
 * sender), before anything else is looked at; `CausewayError('INVALID_REQUEST')` naming the first
 * field that is wrong otherwise.
 */
export function checkLogEntry(entry: unknown, regions: number): LogEntry {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry))
    throw bad('a log entry must be an object')
  const e = entry as Record<string, unknown>
  const where = `entry ${String(e.origin)}:${String(e.idx)}`
  if (typeof e.kind !== 'string') throw bad(`${where}: kind must be text`)
  checkEntryKind(e.kind, where)
  if (!isRegionId(e.origin, regions)) throw bad(`${where}: origin is not a region of ${regions}`)
  if (!isSafeCounter(e.idx)) throw bad(`${where}: idx is not in 1..2^53 - 2`)
  if (typeof e.key !== 'string' || e.key.length === 0 || !e.key.isWellFormed())
    throw bad(`${where}: key must be a non-empty string of valid Unicode`)
  if (!isHlc(e.ts)) throw bad(`${where}: ts is not an HLC (16 lowercase hex digits)`)
  if (typeof e.at !== 'number' || !Number.isFinite(e.at) || e.at < 0 || e.at > MAX_MILLIS)
    throw bad(`${where}: at is not a wall-clock reading in ms`)
  const body = BODY_OF[e.kind]
  for (const field of BODIES) {
    if (field === body) {
      if (typeof e[field] !== 'string') throw bad(`${where}: a ${e.kind} carries ${field} as text`)
    } else if (e[field] !== undefined) throw bad(`${where}: a ${e.kind} carries no ${field}`)
  }
  if (e.value === '') throw bad(`${where}: value is empty (a value is JSON text)`)
  if (Object.isFrozen(entry)) return entry as LogEntry
  // Numbers as JSON would give them back (`-0` is 0: `counter-bounds.ts`).
  const head: LogEntryHead = {
    origin: withoutNegativeZero(e.origin as number),
    idx: e.idx as number,
    key: e.key,
    ts: e.ts,
    at: withoutNegativeZero(e.at as number),
  }
  switch (e.kind) {
    case 'put':
      return putEntry(head, e.value as string)
    case 'delete':
      return deleteEntry(head)
    case 'siblings':
      return siblingsEntry(head, e.siblings as string)
    case 'set-op':
      return setOpEntry(head, e.setDelta as string)
  }
}

/**
 * Throws `UNSUPPORTED_LOG_FORMAT` unless `kind` is a kind of log entry this version knows
 * (`where` names the entry in the message).
 */
export function checkEntryKind(kind: string, where = 'an entry'): asserts kind is LogEntryKind {
  if (isLogEntryKind(kind)) return
  throw new CausewayError(
    'UNSUPPORTED_LOG_FORMAT',
    `${where} is of kind ${JSON.stringify(kind.slice(0, 32))}, which this gateway does not know (it knows ${LOG_ENTRY_KINDS.join(', ')})`,
    { field: 'kind', got: kind.slice(0, 32), supported: [...LOG_ENTRY_KINDS] },
  )
}

function bad(why: string): CausewayError {
  return new CausewayError('INVALID_REQUEST', `malformed log entry: ${why}`)
}
