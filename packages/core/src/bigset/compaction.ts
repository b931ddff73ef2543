/**
 * Compaction (section 4.3.3): "every key whose dot is seen by the set-tombstone can be
 * removed", and once it is, the tombstone forgets the dot, so the tombstone only ever holds the
 * removals not yet compacted. Covered keys are found by any ordered walk (a read's `onCovered`
 * hook, or a background pass); this decides the batch that deletes them and trims the tombstone.
 *
 * A tombstone dot can also outlive its key for good (a remove delivered twice, after the key
 * was compacted). Such a dot can never get a key again, since the set-clock has seen it, so a
 * pass over every element key ends by dropping every dot of the tombstone it started with.
 */
import { removeDots, subtractClock, type DotClock } from './clock.js'
import { encodeClock } from './clock-codec.js'
import type { BigsetKeys, ElementKey } from './keys.js'
import type { KvWrite } from './ordered-kv.js'

/** The outcome of {@link planCompaction}. */
export interface CompactionPlan {
  /** The trimmed tombstone. */
  readonly tombstone: DotClock
  /** Deletes of the covered keys, then the new tombstone; write them atomically. */
  readonly writes: KvWrite[]
}

/** Options of {@link planCompaction}. */
export interface CompactionOptions {
  /**
   * The tombstone as read when a pass over *every* element key of the set began, once that pass
   * has met (and is deleting) every key it covered: all its dots are then dropped.
   * @default undefined (a partial walk: only the met keys' dots are dropped)
   */
  readonly passStart?: DotClock
}

/**
 * Plans the deletion of element keys covered by the tombstone. `tombstone` must be the current
 * one, read under the same per-set lock as the batch is written; `covered` are keys met during
 * a walk whose dots a tombstone read then covered (tombstones only lose dots by compaction, so
 * they are still covered unless already compacted, and deleting twice is harmless).
 */
export function planCompaction(
  keys: BigsetKeys,
  tombstone: DotClock,
  covered: readonly (ElementKey & { readonly key?: Uint8Array })[],
  options: CompactionOptions = {},
): CompactionPlan {
  const writes: KvWrite[] = covered.map((k) => ({
    type: 'del',
    key: k.key ?? keys.element(k.element, k.dot),
  }))
  // Subtracting the pass's start first keeps a large base whole instead of splitting it dot by dot.
  let next =
    options.passStart !== undefined ? subtractClock(tombstone, options.passStart) : tombstone
  next = removeDots(
    next,
    covered.map((k) => k.dot),
  )
  if (next !== tombstone)
    writes.push({ type: 'put', key: keys.tombstone, value: encodeClock(next) })
  return { tombstone: next, writes }
}
