/**
 * The writes of a transaction as its log records and `commit` log entries carry them: JSON text of
 * `[[key, value], [key], ...]`, one pair per key, keys in code-unit order and distinct, `value` the
 * JSON text of the value written and a lone key a delete. The order makes the text of a given set
 * of writes unique, so every replica that splits or re-encodes it gets the same bytes.
 */
import { CausewayError } from './errors.js'
import type { CommitEntry } from './log-entry.js'

/** One write of a transaction: `value` is JSON text, `undefined` deletes the key. */
export type TxWrite = readonly [key: string, value: string | undefined]

/** `writes` sorted by key; throws a `RangeError` on a repeated key (a caller's bug). */
export function sortWrites(writes: readonly TxWrite[]): TxWrite[] {
  const sorted = [...writes].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  for (let i = 1; i < sorted.length; i++)
    if (sorted[i]![0] === sorted[i - 1]![0])
      throw new RangeError(`key ${JSON.stringify(sorted[i]![0])} is written twice`)
  return sorted
}

// Each write's own text, made once per write object: a transaction's writes are encoded for its
// log record, its fingerprint and each partition's commit entry, from the same objects.
const pairs = new WeakMap<TxWrite, string>()

/** The text of `writes`, which must already be sorted and distinct ({@link sortWrites}). */
export function encodeCommitWrites(writes: readonly TxWrite[]): string {
  let out = '['
  for (let i = 0; i < writes.length; i++) {
    const write = writes[i]!
    let text = pairs.get(write)
    if (text === undefined) {
      text = JSON.stringify(write[1] === undefined ? [write[0]] : [write[0], write[1]])
      pairs.set(write, text)
    }
    out += i === 0 ? text : ',' + text
  }
  return out + ']'
}

// Entries are frozen and shared by the replicas of a process: each is decoded once.
const decoded = new WeakMap<CommitEntry, readonly TxWrite[]>()

/** The writes of a checked `commit` entry, decoded once per entry object. */
export function commitWritesOf(entry: CommitEntry): readonly TxWrite[] {
  let writes = decoded.get(entry)
  if (writes === undefined) {
    writes = decodeCommitWrites(entry.writes)
    decoded.set(entry, writes)
  }
  return writes
}

/**
 * Inverse of {@link encodeCommitWrites}, checked: at least one write, each a non-empty key of
 * valid Unicode with a non-empty value text or none, keys strictly ascending. The result is frozen.
 * @throws `CausewayError('INVALID_REQUEST')` naming what is wrong.
 */
export function decodeCommitWrites(text: string): readonly TxWrite[] {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    throw bad('not JSON')
  }
  if (!Array.isArray(json) || json.length === 0) throw bad('not a non-empty array')
  let previous: string | undefined
  const writes = json.map((pair: unknown, i): TxWrite => {
    if (!Array.isArray(pair) || pair.length < 1 || pair.length > 2)
      throw bad(`write ${i} is not [key, value] or [key]`)
    const [key, value] = pair as unknown[]
    if (typeof key !== 'string' || key.length === 0 || !key.isWellFormed())
      throw bad(`write ${i} has no key of valid Unicode`)
    if (previous !== undefined && !(previous < key))
      throw bad(`write ${i}: keys are not distinct and in order`)
    if (pair.length === 2 && (typeof value !== 'string' || value.length === 0))
      throw bad(`write ${i}: a value is non-empty JSON text`)
    previous = key
    return Object.freeze([key, value as string | undefined]) as TxWrite
  })
  return Object.freeze(writes)
}

function bad(why: string): CausewayError {
  return new CausewayError('INVALID_REQUEST', `malformed commit writes: ${why}`)
}
