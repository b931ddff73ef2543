/**
 * The siblings of a key in a `siblings` namespace, as every backend stores and ships them: a DVV
 * set ({@link DvvSet}, actors = region ids) whose values are {@link Sibling}s, and its text form.
 *
 * Who does what (the DVV paper's get/put, with regions as the actors):
 * - the region's partition leader, the only issuer of its region's dots, applies a write with
 *   {@link writeSibling} (`update(new(context, sibling), local, region)`) and logs the result;
 * - every other replica (followers of the leader, leaders of other regions receiving the log)
 *   merges the logged set into its own with {@link mergeSiblings} (`sync`), so every replica that
 *   applied the same entries holds the same siblings, whatever the order across origins.
 * Anonymous values never reach storage: a write always becomes a dot of its leader's region.
 *
 * The text form, its decoder and the counter bound live in `@causeway/core`
 * (`sibling-set-codec.ts`, `counter-bounds.ts`), shared with the tests that fuzz them.
 */
import {
  type CausalContext,
  CausewayError,
  DvvSet,
  MAX_SAFE_COUNTER,
  NO_SIBLINGS,
  type Sibling,
  type SiblingSet,
  checkCausalContext,
  decodeSiblingSet,
  encodeSiblingSet,
} from '@causeway/core'
import type { SiblingsEntry } from './partition-replica.js'

export { NO_SIBLINGS, decodeSiblingSet, encodeSiblingSet, type Sibling, type SiblingSet }

/** One sibling with the region that wrote it, as reads list them. */
export interface SiblingVersion extends Sibling {
  dc: number
}

/**
 * The leader's write: `sibling` as a new dot of `region`, superseding every sibling `context`
 * covers; the others stay. The result is newer than both `local` and `context`.
 * @throws `CausewayError('INVALID_CONTEXT')` when `context` claims more writes of `region` to
 * the key than `local` (the region's own leader, the only issuer of its dots) holds: such a
 * context is forged, and its counter would otherwise become the key's.
 * @throws `CausewayError('COUNTER_EXHAUSTED')` when the new dot would pass `MAX_SAFE_COUNTER`.
 */
export function writeSibling(
  local: SiblingSet,
  context: CausalContext,
  sibling: Sibling,
  region: number,
): SiblingSet {
  const own = local.entries.find(([actor]) => actor === region)?.[1] ?? 0
  const claimed = context.find(([actor]) => actor === region)?.[1] ?? 0
  if (claimed > own)
    throw new CausewayError(
      'INVALID_CONTEXT',
      `invalid causeway-context: it names write ${claimed} of region ${region} to this key, which has had ${own}`,
      { region, claimed, written: own },
    )
  if (own >= MAX_SAFE_COUNTER)
    throw new CausewayError(
      'COUNTER_EXHAUSTED',
      `the key's counter for region ${region} is at ${own}, the most there can be: it takes no more writes in this region`,
      { region, counter: own },
    )
  return DvvSet.update(DvvSet.new(context, sibling), local, region)
}

/** A replica's merge of a logged set into its own (`sync`): commutative, idempotent. */
export function mergeSiblings(local: SiblingSet, logged: SiblingSet): SiblingSet {
  return DvvSet.sync([local, logged])
}

/** Most siblings a write may leave a key with (Riak's `max_siblings` default). */
export const MAX_SIBLINGS = 100

/**
 * Largest text form a write may leave a key's set with: room for one largest value per region.
 * Every log entry carries its key's whole set, so this bounds what shipping carries (the
 * internal shipping endpoint accepts twice as much, for writes that race past the check).
 */
export function maxSiblingSetChars(regions: number, maxValueBytes: number): number {
  return regions * (maxValueBytes + 1024)
}

/**
 * What a leader's set would hold after a write of `value` with `context`: how many siblings and
 * how long its text form, to refuse writes that would grow a key past {@link MAX_SIBLINGS} or
 * {@link maxSiblingSetChars} before they are made.
 */
export function siblingsAfter(
  local: SiblingSet,
  context: CausalContext,
  value: string | undefined,
  region: number,
): { siblings: number; chars: number } {
  // The ts does not change the count; its length (16) is that of any HLC.
  const ts = '0000000000000000' as Sibling['ts']
  const next = writeSibling(local, context, value === undefined ? { ts } : { ts, value }, region)
  return { siblings: DvvSet.size(next), chars: encodeSiblingSet(next).length }
}

/** The causal context of a set: what a read returns and a superseding write sends back. */
export function contextOf(set: SiblingSet): CausalContext {
  return DvvSet.join(set)
}

/** Every sibling (tombstones included) with its region, oldest first by `(ts, dc)`. */
export function listSiblings(set: SiblingSet): SiblingVersion[] {
  const out: SiblingVersion[] = []
  for (const [dc, , siblings] of set.entries)
    for (const s of siblings) out.push(s.value === undefined ? { ts: s.ts, dc } : { ...s, dc })
  return out.sort((a, b) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : a.dc - b.dc))
}

/**
 * Checks a context against a cluster of `regions` regions: region ids below it, ascending,
 * counters in `1..MAX_SAFE_COUNTER` (what `decodeCausalContext` guarantees for a context off
 * the wire).
 * @throws `CausewayError('INVALID_CONTEXT')` otherwise.
 */
export function checkContext(context: CausalContext, regions: number): void {
  checkCausalContext(context, regions)
}

/**
 * The set a sibling write's log entry carries, decoded: it must parse (actors below `regions`,
 * counters within bounds) and hold the entry's own write, the newest sibling of its origin
 * stamped with the entry's ts. A replica merges only such a set; an entry whose set fails here is
 * logged without being merged, and reported (`quarantine.ts`): refusing it would stop its
 * partition's replication at that entry for good.
 * @throws `CausewayError('INVALID_REQUEST')` otherwise.
 */
export function decodeLoggedSiblings(
  entry: Pick<SiblingsEntry, 'origin' | 'idx' | 'ts' | 'siblings'>,
  regions: number,
): SiblingSet {
  const set = decodeSiblingSet(entry.siblings, regions)
  const own = set.entries.find(([actor]) => actor === entry.origin)
  if (own?.[2][0]?.ts !== entry.ts)
    throw malformed(`entry ${entry.origin}:${entry.idx} carries a set without its own write`)
  return set
}

function malformed(why: string): CausewayError {
  return new CausewayError('INVALID_REQUEST', `malformed sibling set: ${why}`)
}
