/**
 * How a region's applied transactions travel to another region, each as one unit: the
 * transaction shipment `{ v, from, units }`, each unit `{ tid, ts, writes, parts }` (its tid in
 * region `from`'s transaction log, its one timestamp, its writes as `encodeCommitWrites` text, and
 * where its commit entries are in `from`'s partition logs, `[partition, idx]`). The receiving
 * region appends each unit to its own transaction log (idempotently: a checkpoint per origin) and
 * applies it there at one tid, so its writes become visible at once in every partition.
 *
 * A receiver checks the whole shipment before it takes anything: an unknown `v` is
 * `UNSUPPORTED_LOG_FORMAT`, anything else wrong `INVALID_REQUEST`.
 */
import { type TxWrite, decodeCommitWrites } from './commit-writes.js'
import { isRegionId, isSafeCounter } from './counter-bounds.js'
import { CausewayError } from './errors.js'
import { type Hlc, isHlc } from './hlc.js'
import { partitionOf } from './partitioner.js'

/** The shipment format this version writes and reads. */
export const TX_SHIPMENT_VERSION = 1

/** One applied transaction of region `from`, as it travels. */
export interface TxUnit {
  tid: number
  ts: Hlc
  /** `encodeCommitWrites` of its writes. */
  writes: string
  parts: [partition: number, idx: number][]
}

/** A shipment: units of one region, in tid order. */
export interface TxShipment {
  v: number
  from: number
  units: TxUnit[]
}

/** A unit as checked: its writes decoded. */
export interface CheckedTxUnit {
  tid: number
  ts: Hlc
  writes: readonly TxWrite[]
  parts: readonly (readonly [number, number])[]
}

/**
 * Checks a shipment received by region `to` of a cluster of `regions` regions and `partitions`
 * partitions: its version, an origin other than `to`, units in strictly increasing tid order, each
 * with an HLC, writes that decode, and parts of existing partitions (at least one, each once).
 * @throws `UNSUPPORTED_LOG_FORMAT` for another version, `INVALID_REQUEST` for anything else.
 */
export function checkTxShipment(
  json: unknown,
  regions: number,
  to: number,
  partitions: number,
): { from: number; units: CheckedTxUnit[] } {
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw bad('a shipment must be an object')
  const s = json as Record<string, unknown>
  if (s.v !== TX_SHIPMENT_VERSION)
    throw new CausewayError(
      'UNSUPPORTED_LOG_FORMAT',
      `transaction shipment version ${JSON.stringify(s.v) ?? 'undefined'} is not one this gateway reads (it reads ${TX_SHIPMENT_VERSION})`,
      { field: 'v', supported: [TX_SHIPMENT_VERSION] },
    )
  if (!isRegionId(s.from, regions) || s.from === to) throw bad('from is not another region')
  if (!Array.isArray(s.units) || s.units.length === 0) throw bad('units must be a non-empty array')
  let tid = 0
  const units = s.units.map((raw: unknown, i): CheckedTxUnit => {
    if (typeof raw !== 'object' || raw === null) throw bad(`unit ${i} is not an object`)
    const u = raw as Record<string, unknown>
    if (!isSafeCounter(u.tid) || u.tid <= tid) throw bad(`unit ${i}: tids must increase`)
    tid = u.tid
    if (!isHlc(u.ts)) throw bad(`unit ${i}: ts is not an HLC`)
    if (typeof u.writes !== 'string') throw bad(`unit ${i}: writes must be text`)
    let writes: readonly TxWrite[]
    try {
      writes = decodeCommitWrites(u.writes)
    } catch (error) {
      throw bad(`unit ${i}: ${(error as Error).message}`)
    }
    if (!Array.isArray(u.parts) || u.parts.length === 0) throw bad(`unit ${i}: parts are missing`)
    const seen = new Set<number>()
    const parts = u.parts.map((part: unknown) => {
      if (
        !Array.isArray(part) ||
        part.length !== 2 ||
        !isRegionId(part[0], partitions) ||
        seen.has(part[0] as number) ||
        !isSafeCounter(part[1])
      )
        throw bad(`unit ${i}: a part is not [partition, idx]`)
      seen.add(part[0] as number)
      return [part[0], part[1]] as const
    })
    // One part per partition the writes touch, and no other.
    const touched = new Set(writes.map(([key]) => partitionOf(key, partitions)))
    if (touched.size !== seen.size || [...touched].some((p) => !seen.has(p)))
      throw bad(`unit ${i}: its parts are not the partitions it writes`)
    return { tid: u.tid, ts: u.ts, writes, parts }
  })
  return { from: s.from, units }
}

function bad(why: string): CausewayError {
  return new CausewayError('INVALID_REQUEST', `malformed transaction shipment: ${why}`)
}
