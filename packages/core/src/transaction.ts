/**
 * Transactions (Nami) as the SDK and the gateway both see them: outcomes, the read set a commit
 * carries and its check, and how a transaction's writes split over partitions.
 */
import type { TxWrite } from './commit-writes.js'
import { isSafeCounter } from './counter-bounds.js'
import { CausewayError } from './errors.js'
import { partitionOf } from './partitioner.js'

/** How the region decided a transaction: its writes were applied, or a read had changed. */
export type TxOutcome = 'applied' | 'conflict'

/** One read of a transaction: the key and the tid of the version it saw (0: none). */
export type TxRead = readonly [key: string, tid: number]

/**
 * Checks a commit's read set: an array of `[key, tid]` pairs, each key a non-empty string of
 * valid Unicode read once, each tid an integer from 0 to `snapshot` (a read at the snapshot
 * cannot have seen a later version). Returns the reads sorted by key, frozen.
 * @throws `CausewayError('INVALID_READ_SET')` naming the first read that is wrong.
 */
export function checkReadSet(raw: unknown, snapshot: number): readonly TxRead[] {
  if (!Array.isArray(raw)) throw badReads('the read set must be an array of [key, tid]')
  const seen = new Set<string>()
  const reads = raw.map((pair: unknown, i): TxRead => {
    if (!Array.isArray(pair) || pair.length !== 2) throw badReads(`read ${i} must be [key, tid]`, i)
    const [key, tid] = pair as unknown[]
    if (typeof key !== 'string' || key.length === 0 || !key.isWellFormed())
      throw badReads(`read ${i}: the key must be a non-empty string of valid Unicode`, i)
    if (seen.has(key)) throw badReads(`read ${i}: ${JSON.stringify(key)} is read twice`, i)
    seen.add(key)
    if (!(tid === 0 || isSafeCounter(tid)))
      throw badReads(`read ${i}: the tid must be a non-negative integer`, i)
    if (tid > snapshot)
      throw badReads(
        `read ${i}: tid ${tid} is after the snapshot (${snapshot}); a read at the snapshot cannot have seen it`,
        i,
      )
    return Object.freeze([key, tid]) as TxRead
  })
  reads.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return Object.freeze(reads)
}

/** `writes` grouped by the partition of their key (of `partitions`), each group in key order. */
export function writesByPartition(
  writes: readonly TxWrite[],
  partitions: number,
): Map<number, TxWrite[]> {
  const out = new Map<number, TxWrite[]>()
  for (const write of writes) {
    const p = partitionOf(write[0], partitions)
    let group = out.get(p)
    if (group === undefined) out.set(p, (group = []))
    group.push(write)
  }
  return out
}

function badReads(message: string, index?: number): CausewayError {
  return new CausewayError(
    'INVALID_READ_SET',
    `malformed read set: ${message}`,
    index === undefined ? undefined : { index },
  )
}
