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
 * Text form (the Redis Lua scripts parse and build the same text, see `replica-scripts.ts`):
 * ```
 * set     = [ entry *( RS entry ) ]              ; "" is the empty set
 * entry   = actor US counter *( US sibling )     ; actors ascending, siblings newest first
 * sibling = ts ( "=" json | "-" )                ; 16 hex digits of HLC, then value or tombstone
 * ```
 * with `RS` = U+001E and `US` = U+001F. Valid JSON text never holds a raw control character, so
 * neither separator can occur inside a value.
 */
import {
  type CausalContext,
  CausewayError,
  DvvSet,
  type Hlc,
  compareDvvActors,
  isHlc,
} from '@causeway/core'
import type { LogEntry } from './partition-replica.js'

/** One sibling: a write's value (JSON text) or, without `value`, a delete's tombstone. */
export interface Sibling {
  /** The HLC the write's leader stamped it with; with the entry's actor, it names the version. */
  ts: Hlc
  value?: string
}

/** The siblings of one key: a DVV set over regions. Its `anonymous` list is always empty. */
export type SiblingSet = DvvSet<Sibling>

/** One sibling with the region that wrote it, as reads list them. */
export interface SiblingVersion extends Sibling {
  dc: number
}

/** The set of a key never written. */
export const NO_SIBLINGS: SiblingSet = Object.freeze({ entries: [], anonymous: [] })

const RS = '\u001e'
const US = '\u001f'

/**
 * The leader's write: `sibling` as a new dot of `region`, superseding every sibling `context`
 * covers; the others stay. The result is newer than both `local` and `context`.
 */
export function writeSibling(
  local: SiblingSet,
  context: CausalContext,
  sibling: Sibling,
  region: number,
): SiblingSet {
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
 * counters ≥ 1 (what `decodeCausalContext` guarantees for a context off the wire).
 * @throws `CausewayError('INVALID_CONTEXT')` otherwise.
 */
export function checkContext(context: CausalContext, regions: number): void {
  let previous = -1
  for (const pair of context) {
    const [actor, counter] = pair
    if (
      !Number.isInteger(actor) ||
      actor <= previous ||
      actor >= regions ||
      !Number.isSafeInteger(counter) ||
      counter < 1
    ) {
      throw new CausewayError(
        'INVALID_CONTEXT',
        `invalid causal context ${JSON.stringify(context)} for a cluster of ${regions} regions`,
      )
    }
    previous = actor
  }
}

/**
 * Checks the set a log entry carries, before a replica queues it: it must parse (actors below
 * `regions`) and hold the entry's own write, the newest sibling of its origin stamped with the
 * entry's ts. So a bad peer gets an error instead of corrupting a replica.
 * @throws `CausewayError('INVALID_REQUEST')` otherwise.
 */
export function checkLoggedSiblings(entry: LogEntry, regions: number): void {
  if (entry.siblings === undefined) return
  if (typeof entry.siblings !== 'string' || entry.value !== undefined)
    throw malformed(`entry ${entry.origin}:${entry.idx} has both a value and a sibling set`)
  const set = decodeSiblingSet(entry.siblings, regions)
  const own = set.entries.find(([actor]) => actor === entry.origin)
  if (own?.[2][0]?.ts !== entry.ts)
    throw malformed(`entry ${entry.origin}:${entry.idx} carries a set without its own write`)
}

/** The text form of a set (see the module comment). */
export function encodeSiblingSet(set: SiblingSet): string {
  if (set.anonymous.length > 0) throw bug('a stored sibling set holds no anonymous values')
  const entries: string[] = []
  for (const [actor, counter, siblings] of set.entries) {
    let text = `${actor}${US}${counter}`
    for (const s of siblings) {
      if (s.value === undefined) text += `${US}${s.ts}-`
      else {
        if (s.value.includes(RS) || s.value.includes(US))
          throw bug('a value holds a raw control character')
        text += `${US}${s.ts}=${s.value}`
      }
    }
    entries.push(text)
  }
  return entries.join(RS)
}

/**
 * Parses the text form strictly: actors ascending non-negative integers (below `regions` when
 * given), counters ≥ 1 and at least the number of siblings, well-formed HLCs.
 * @throws `CausewayError('INVALID_REQUEST')` on anything else (a corrupt store or a bad peer).
 */
export function decodeSiblingSet(text: string, regions?: number): SiblingSet {
  if (text === '') return NO_SIBLINGS
  const entries: [number, number, Sibling[]][] = []
  let previous: number | undefined
  for (const part of text.split(RS)) {
    const fields = part.split(US)
    const actor = decimal(fields[0])
    const counter = decimal(fields[1])
    if (actor === undefined || (regions !== undefined && actor >= regions))
      throw malformed(`bad actor ${JSON.stringify(fields[0])}`)
    if (previous !== undefined && compareDvvActors(previous, actor) >= 0)
      throw malformed('actors not ascending')
    if (counter === undefined || counter < 1 || counter < fields.length - 2)
      throw malformed(`bad counter ${JSON.stringify(fields[1])}`)
    const siblings: Sibling[] = []
    for (let i = 2; i < fields.length; i++) {
      const field = fields[i]!
      const ts = field.slice(0, 16)
      const mark = field[16]
      if (!isHlc(ts) || (mark === '-' ? field.length !== 17 : mark !== '='))
        throw malformed(`bad sibling of actor ${actor}`)
      siblings.push(mark === '-' ? { ts } : { ts, value: field.slice(17) })
    }
    entries.push([actor, counter, siblings])
    previous = actor
  }
  return { entries, anonymous: [] }
}

function decimal(text: string | undefined): number | undefined {
  if (text === undefined || !/^(0|[1-9][0-9]{0,15})$/.test(text)) return undefined
  const n = Number(text)
  return Number.isSafeInteger(n) ? n : undefined
}

function malformed(why: string): CausewayError {
  return new CausewayError('INVALID_REQUEST', `malformed sibling set: ${why}`)
}

function bug(why: string): CausewayError {
  return new CausewayError('INTERNAL', `sibling set: ${why}`)
}
