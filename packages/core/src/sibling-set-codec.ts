/**
 * The text form of a key's siblings (a DVV set over regions whose values are {@link Sibling}s),
 * as every backend stores and ships it; the Redis Lua scripts parse and build the same text
 * (`gateway/src/storage/redis/replica-scripts.ts`), with the same bounds.
 *
 * ```
 * set     = [ entry *( RS entry ) ]              ; "" is the empty set
 * entry   = actor US counter *( US sibling )     ; actors ascending, siblings newest first
 * sibling = ts ( "=" json | "-" )                ; 16 hex digits of HLC, then value or tombstone
 * ```
 * with `RS` = U+001E and `US` = U+001F. Valid JSON text never holds a raw control character, so
 * neither separator can occur inside a value. Actors and counters are canonical decimals: actors
 * region ids, counters in `1..MAX_SAFE_COUNTER` and at least the number of the actor's siblings.
 *
 * The decoder is the gate between stored (or shipped) text and every plan made from it: what it
 * accepts re-encodes to the same text and can take one more dot of any of its actors.
 */
import { actorRegion } from './causal-context.js'
import { MAX_SAFE_COUNTER, isSafeCounter } from './counter-bounds.js'
import type { DvvSet } from './dvvset.js'
import { CausewayError } from './errors.js'
import { type Hlc, isHlc } from './hlc.js'

/** One sibling: a write's value (JSON text) or, without `value`, a delete's tombstone. */
export interface Sibling {
  /** The HLC the write's leader stamped it with; with the entry's actor, it names the version. */
  ts: Hlc
  value?: string
}

/** The siblings of one key: a DVV set over regions. Its `anonymous` list is always empty. */
export type SiblingSet = DvvSet<Sibling>

/** The set of a key never written. */
export const NO_SIBLINGS: SiblingSet = Object.freeze({ entries: [], anonymous: [] })

const RS = '\u001e'
const US = '\u001f'

/**
 * The text form of a set.
 * @throws `CausewayError('INTERNAL')` for a set no decoder would accept back: anonymous values,
 * an actor that is not a non-negative integer, a counter outside `1..MAX_SAFE_COUNTER` (a writer
 * must refuse the write that would make one first), a value holding a separator.
 */
export function encodeSiblingSet(set: SiblingSet): string {
  if (set.anonymous.length > 0) throw bug('a stored sibling set holds no anonymous values')
  const entries: string[] = []
  for (const [actor, counter, siblings] of set.entries) {
    if (!Number.isSafeInteger(actor) || actor < 0) throw bug(`actor ${actor} is not a region id`)
    if (!isSafeCounter(counter) || counter < siblings.length)
      throw bug(`counter ${counter} of actor ${actor} is out of range`)
    let text = `${actor}${US}${counter}`
    for (const s of siblings) {
      if (s.value === undefined) text += `${US}${s.ts}-`
      else {
        if (s.value === '' || s.value.includes(RS) || s.value.includes(US))
          throw bug('a value is empty or holds a raw control character')
        text += `${US}${s.ts}=${s.value}`
      }
    }
    entries.push(text)
  }
  return entries.join(RS)
}

/**
 * Parses the text form strictly: actors ascending canonical decimals (of a region below
 * `regions` when given, `actorRegion`), counters canonical decimals in `1..MAX_SAFE_COUNTER` and at least the number of
 * siblings, well-formed HLCs, non-empty values.
 * @throws `CausewayError('INVALID_REQUEST')` ("malformed sibling set") on anything else: a
 * corrupt store or a bad peer.
 */
export function decodeSiblingSet(text: string, regions?: number): SiblingSet {
  if (typeof text !== 'string') throw malformed('not text')
  if (text === '') return NO_SIBLINGS
  const entries: [number, number, Sibling[]][] = []
  let previous = -1
  for (const part of text.split(RS)) {
    const fields = part.split(US)
    const actor = decimal(fields[0])
    const counter = decimal(fields[1])
    if (
      actor === undefined ||
      !Number.isSafeInteger(actor) ||
      (regions !== undefined && actorRegion(actor) >= regions)
    )
      throw malformed(`bad actor ${JSON.stringify(fields[0]?.slice(0, 20))}`)
    if (actor <= previous) throw malformed('actors not ascending')
    if (counter === undefined || !isSafeCounter(counter) || counter < fields.length - 2)
      throw malformed(
        `bad counter ${JSON.stringify(fields[1]?.slice(0, 20))} (1..${MAX_SAFE_COUNTER})`,
      )
    const siblings: Sibling[] = []
    for (let i = 2; i < fields.length; i++) {
      const field = fields[i]!
      const ts = field.slice(0, 16)
      const mark = field[16]
      if (!isHlc(ts) || (mark === '-' ? field.length !== 17 : mark !== '=' || field.length === 17))
        throw malformed(`bad sibling of actor ${actor}`)
      siblings.push(mark === '-' ? { ts } : { ts, value: field.slice(17) })
    }
    entries.push([actor, counter, siblings])
    previous = actor
  }
  return { entries, anonymous: [] }
}

// Canonical decimals of at most 16 digits (2^53 has 16); the caller bounds the value.
function decimal(text: string | undefined): number | undefined {
  if (text === undefined || !/^(0|[1-9][0-9]{0,15})$/.test(text)) return undefined
  return Number(text)
}

function malformed(why: string): CausewayError {
  return new CausewayError('INVALID_REQUEST', `malformed sibling set: ${why}`)
}

function bug(why: string): CausewayError {
  return new CausewayError('INTERNAL', `sibling set: ${why}`)
}
