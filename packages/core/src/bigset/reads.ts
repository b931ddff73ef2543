/**
 * Streaming reads of one replica (section 4.4): a read is an ordered walk over the element
 * keys, turning them back into ORSWOT entries. A key whose dot the set-tombstone has seen is
 * removed and skipped; the keys of one element are adjacent, so an element is complete as soon
 * as the walk moves past it. Nothing ever holds more than one element's keys.
 */
import { hasSeen, type DotClock } from './clock.js'
import { decodeClock } from './clock-codec.js'
import type { Dot } from './dot.js'
import { checkElement } from './element.js'
import type { BigsetKeys, ElementKey } from './keys.js'
import type { KvRange, OrderedKv } from './ordered-kv.js'
import type { BigsetClocks } from './writes.js'

/** One element of a set with its context: the dots under which it is present, ascending. */
export interface SetEntry {
  readonly element: string
  readonly dots: readonly Dot[]
}

/** An element key as met during a walk. */
export interface StoredElementKey extends ElementKey {
  readonly key: Uint8Array
}

/** Where a scan starts and how far it goes. */
export interface ScanOptions {
  /** First element to include (inclusive). @default the first element of the set */
  readonly from?: string
  /** Start strictly after this element (a page cursor); exclusive with `from`. */
  readonly after?: string
  /** Most elements to yield. @default Infinity */
  readonly limit?: number
  /**
   * Called for each key the tombstone covers, as the walk meets it: a hook for compaction
   * during iteration (see `planCompaction`).
   */
  readonly onCovered?: (key: StoredElementKey) => void
}

/** Reads a replica's set-clock and set-tombstone (both fresh when the set is new here). */
export async function readClocks(kv: OrderedKv, keys: BigsetKeys): Promise<BigsetClocks> {
  const [clock, tombstone] = await Promise.all([kv.get(keys.clock), kv.get(keys.tombstone)])
  return { clock: decodeClock(clock), tombstone: decodeClock(tombstone) }
}

/** Reads only the set-tombstone: all a single replica's `has` and `scan` need. */
export async function readTombstone(kv: OrderedKv, keys: BigsetKeys): Promise<DotClock> {
  return decodeClock(await kv.get(keys.tombstone))
}

/** The key range of the elements a scan covers. */
export function scanRange(
  keys: BigsetKeys,
  options: Pick<ScanOptions, 'from' | 'after'> = {},
): KvRange {
  if (options.from !== undefined && options.after !== undefined) {
    throw new RangeError('scan takes `from` or `after`, not both')
  }
  if (options.after !== undefined) {
    checkElement(options.after)
    return { gte: keys.elementEnd(options.after), lt: keys.elementsEnd }
  }
  if (options.from !== undefined) {
    checkElement(options.from)
    return { gte: keys.elementStart(options.from), lt: keys.elementsEnd }
  }
  return { gte: keys.elementsStart, lt: keys.elementsEnd }
}

/** The decoded element keys of a range, ascending. */
export async function* storedElementKeys(
  kv: OrderedKv,
  keys: BigsetKeys,
  range: KvRange,
): AsyncGenerator<StoredElementKey> {
  for await (const key of kv.keys(range)) {
    const { element, dot } = keys.decodeElement(key)
    yield { element, dot, key }
  }
}

/**
 * Groups adjacent element keys into entries, dropping dots the tombstone covers and elements
 * left with none. Stops after `limit` entries, which stops (and releases) the source.
 */
export async function* liveEntries(
  stored: AsyncIterable<StoredElementKey>,
  tombstone: DotClock,
  options: Pick<ScanOptions, 'limit' | 'onCovered'> = {},
): AsyncGenerator<SetEntry> {
  const limit = options.limit ?? Infinity
  if (limit <= 0) return
  let count = 0
  let element: string | undefined
  let dots: Dot[] = []
  for await (const k of stored) {
    if (k.element !== element) {
      if (dots.length > 0) {
        yield { element: element!, dots }
        if (++count >= limit) return
      }
      element = k.element
      dots = []
    }
    if (hasSeen(tombstone, k.dot)) options.onCovered?.(k)
    else dots.push(k.dot)
  }
  if (dots.length > 0) yield { element: element!, dots }
}

/** The live dots of one element (its context); empty when absent. Reads only its own keys. */
export async function readElementDots(
  kv: OrderedKv,
  keys: BigsetKeys,
  element: string,
  tombstone: DotClock,
): Promise<Dot[]> {
  checkElement(element)
  const dots: Dot[] = []
  const range = { gte: keys.elementStart(element), lt: keys.elementEnd(element) }
  for await (const k of storedElementKeys(kv, keys, range))
    if (!hasSeen(tombstone, k.dot)) dots.push(k.dot)
  return dots
}

/** The elements of one replica in order, from the given point on. */
export function scanEntries(
  kv: OrderedKv,
  keys: BigsetKeys,
  tombstone: DotClock,
  options: ScanOptions = {},
): AsyncGenerator<SetEntry> {
  return liveEntries(storedElementKeys(kv, keys, scanRange(keys, options)), tombstone, options)
}
