/**
 * The envelope of one partition-log entry as replicas exchange it: a follower applying its
 * leader's log, a leader receiving another region's shipped entries (`POST
 * /v1/internal/ship/:partition/:origin`). Checked field by field before a replica queues it, so an
 * entry that could not be stored, ordered or shipped on is refused up front with `INVALID_REQUEST`.
 *
 * What it carries is checked where it is used: a sibling set by `decodeSiblingSet` when it is
 * merged (an entry whose set does not decode is logged but not merged, and reported), a set
 * delta by the set replica.
 */
import { isRegionId, isSafeCounter } from './counter-bounds.js'
import { CausewayError } from './errors.js'
import { type Hlc, isHlc } from './hlc.js'

/** One log entry on the wire between replicas (the gateway's `LogEntry`). */
export interface LogEntryWire {
  /** Region where the write was accepted. */
  origin: number
  /** Position in the origin's stream: 1..MAX_SAFE_COUNTER. */
  idx: number
  key: string
  /** JSON text of the value; absent for a tombstone, a sibling write and a set write. */
  value?: string
  ts: Hlc
  /** Wall-clock ms at which the origin leader appended it. */
  at: number
  /** A siblings-namespace write: the origin's sibling set of `key` after it, as text. */
  siblings?: string
  /** A set write: the delta the origin planned, as JSON text. */
  setDelta?: string
}

// The latest wall-clock ms an HLC can carry (48 bits); `at` is such a reading.
const MAX_MILLIS = 2 ** 48 - 1

/**
 * Checks one entry of a cluster of `regions` regions: `origin` a region id, `idx` in
 * `1..MAX_SAFE_COUNTER`, a non-empty key of well-formed Unicode, `ts` an HLC, `at` a wall-clock
 * reading in ms, and at most one of a non-empty `value`, a `siblings` text and a `setDelta` text.
 * @throws `CausewayError('INVALID_REQUEST')` naming the first field that is wrong.
 */
export function checkLogEntry(entry: unknown, regions: number): asserts entry is LogEntryWire {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry))
    throw bad('a log entry must be an object')
  const e = entry as Record<string, unknown>
  const where = `entry ${String(e.origin)}:${String(e.idx)}`
  if (!isRegionId(e.origin, regions)) throw bad(`${where}: origin is not a region of ${regions}`)
  if (!isSafeCounter(e.idx)) throw bad(`${where}: idx is not in 1..2^53 - 2`)
  if (typeof e.key !== 'string' || e.key.length === 0 || !e.key.isWellFormed())
    throw bad(`${where}: key must be a non-empty string of valid Unicode`)
  if (!isHlc(e.ts)) throw bad(`${where}: ts is not an HLC (16 lowercase hex digits)`)
  if (typeof e.at !== 'number' || !Number.isFinite(e.at) || e.at < 0 || e.at > MAX_MILLIS)
    throw bad(`${where}: at is not a wall-clock reading in ms`)
  let bodies = 0
  for (const field of ['value', 'siblings', 'setDelta'] as const) {
    if (e[field] === undefined) continue
    if (typeof e[field] !== 'string') throw bad(`${where}: ${field} must be text`)
    bodies++
  }
  if (bodies > 1) throw bad(`${where}: holds more than one of value, siblings and setDelta`)
  if (e.value === '') throw bad(`${where}: value is empty (a value is JSON text)`)
}

function bad(why: string): CausewayError {
  return new CausewayError('INVALID_REQUEST', `malformed log entry: ${why}`)
}
