/**
 * The siblings of a key in a `siblings` namespace, as every backend stores and ships them: a DVV
 * set ({@link DvvSet}, actors = region ids) whose values are {@link Sibling}s, and its text form.
 *
 * Who does what (the DVV paper's get/put, with a region's epochs as the actors):
 * - the region's partition leader, the only issuer of its region's dots, applies a write with
 *   {@link writeSibling} (`update(new(context, sibling), local, actor)`, the actor
 *   `siblingActor(region, epoch)`) and logs the result;
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
  actorRegion,
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
 * The leader's write: `sibling` as a new dot of `actor` (`siblingActor(region, epoch)` of the
 * leader), superseding every sibling `context` covers; the others stay. The context is signed by
 * the cluster for this key (`sibling-contexts.ts`), so each counter names writes a leader made: it
 * is taken as issued, also for writes not received here yet (they are dropped when they arrive),
 * so a region switch between a read and its write makes no false conflict. The result is newer
 * than both `local` and the context.
 * @throws `CausewayError('INVALID_CONTEXT')` when `context` claims more writes of `actor` to the
 * key than `local` (the leader of this epoch, the only issuer of its dots) holds: such a context
 * was not issued by this cluster.
 * @throws `CausewayError('COUNTER_EXHAUSTED')` when the new dot would pass `MAX_SAFE_COUNTER`
 * (2^53 - 2 writes of one leader to one key: no input can cause it, since contexts are signed).
 */
export function writeSibling(
  local: SiblingSet,
  context: CausalContext,
  sibling: Sibling,
  actor: number,
): SiblingSet {
  const own = local.entries.find(([a]) => a === actor)?.[1] ?? 0
  const claimed = context.find(([a]) => a === actor)?.[1] ?? 0
  const region = actorRegion(actor)
  if (claimed > own)
    throw new CausewayError(
      'INVALID_CONTEXT',
      `invalid causeway-context: it names write ${claimed} of region ${region} (actor ${actor}) to this key, which has had ${own}`,
      { region, actor, claimed, written: own },
    )
  if (own >= MAX_SAFE_COUNTER)
    throw new CausewayError(
      'COUNTER_EXHAUSTED',
      `the key's counter for region ${region} (actor ${actor}) is at ${own}, the most there can be: it takes no more writes in this region (see causeway reset-key)`,
      { region, actor, counter: own },
    )
  return DvvSet.update(DvvSet.new(context, sibling), local, actor)
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
  actor: number,
): { siblings: number; chars: number } {
  // The ts does not change the count; its length (16) is that of any HLC.
  const ts = '0000000000000000' as Sibling['ts']
  const next = writeSibling(local, context, value === undefined ? { ts } : { ts, value }, actor)
  return { siblings: DvvSet.size(next), chars: encodeSiblingSet(next).length }
}

/** The causal context of a set: what a read returns and a superseding write sends back. */
export function contextOf(set: SiblingSet): CausalContext {
  return DvvSet.join(set)
}

/** Every sibling (tombstones included) with its region, oldest first by `(ts, dc)`. */
export function listSiblings(set: SiblingSet): SiblingVersion[] {
  const out: SiblingVersion[] = []
  for (const [actor, , siblings] of set.entries) {
    const dc = actorRegion(actor)
    for (const s of siblings) out.push(s.value === undefined ? { ts: s.ts, dc } : { ...s, dc })
  }
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
  // The origin's actor of the entry's epoch: the one whose newest sibling the entry stamped.
  const own = set.entries.some(
    ([actor, , siblings]) => actorRegion(actor) === entry.origin && siblings[0]?.ts === entry.ts,
  )
  if (!own)
    throw malformed(`entry ${entry.origin}:${entry.idx} carries a set without its own write`)
  return set
}

function malformed(why: string): CausewayError {
  return new CausewayError('INVALID_REQUEST', `malformed sibling set: ${why}`)
}
