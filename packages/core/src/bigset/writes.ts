/**
 * The write algorithms of the Bigsets paper as pure planners: clocks in, the new clocks and one
 * atomic batch of writes out. Nothing here reads the element keys, so an insert or a remove
 * costs the same in a set of ten elements or ten million.
 *
 * - {@link planInsert} is Algorithm 1 (coordinator): absorb the context, mint a dot at the
 *   coordinating actor, write the clock and one element key; the element key is the delta.
 * - {@link planRemove} absorbs the observed context only: no dot, no element key.
 * - {@link planApplyDelta} is Algorithm 2 (replica), for both kinds of delta.
 *
 * Absorbing a context dot: if the set-clock has not seen it, it goes into the set-clock, so its
 * element key will never be written here; if it has, its key may exist and the dot goes into the
 * set-tombstone, which hides the key from reads until compaction deletes it (or, with
 * `removal: 'delete'`, the key is deleted in the same batch).
 *
 * The caller reads the clocks, plans and writes the batch atomically, and must not let two
 * plans for the same set interleave between the read and the write (a per-set lock, a Lua
 * script, a transaction).
 */
import { addDot, freshClock, incrementClock, hasSeen, type DotClock } from './clock.js'
import { encodeClock } from './clock-codec.js'
import type { BigsetDelta, ElementAdd, ElementRemove } from './delta.js'
import { isActor, normalizeDots, sameDot, type Actor, type Dot } from './dot.js'
import { checkElement } from './element.js'
import type { BigsetKeys } from './keys.js'
import { ELEMENT_VALUE, type KvWrite } from './ordered-kv.js'

/** The two clocks of one replica of a set. */
export interface BigsetClocks {
  /** The set-clock: every event this replica has seen. */
  readonly clock: DotClock
  /** The set-tombstone: events removed whose element keys may still be stored. */
  readonly tombstone: DotClock
}

/** An element with the context the client observed for it. */
export interface ElementOp {
  readonly element: string
  /** The element's dots the client saw (from `has` or `scan`); empty or absent if none. */
  readonly ctx?: readonly Dot[]
}

/** Options of the planners. */
export interface PlanOptions {
  /**
   * What happens to the key of a removed dot the set-clock has seen: `'tombstone'` records the
   * dot in the set-tombstone and leaves the key to compaction (the paper's way: a remove writes
   * only clocks); `'delete'` deletes the key in the same batch (as the reference's master code
   * does) and leaves the tombstone alone, for stores without a compaction hook.
   * @default 'tombstone'
   */
  readonly removal?: 'tombstone' | 'delete'
  /**
   * The live dots, before this write, of every element the write touches (`readElementDots`).
   * When given, the plan reports `sizeDelta`, so a backend can keep an exact element count at
   * the cost of one seek per element, whatever the set's size.
   * @default undefined (no `sizeDelta`)
   */
  readonly live?: ReadonlyMap<string, readonly Dot[]>
}

/** The outcome of a planner. */
export interface WritePlan {
  /** The clocks after the batch. */
  readonly clocks: BigsetClocks
  /** The batch to write atomically; empty when nothing changes. */
  readonly writes: KvWrite[]
  /** How many elements the batch adds to the set (negative: removes); only with `live`. */
  readonly sizeDelta?: number
  /**
   * The live dots, after the batch, of every element it touched; only with `live`. A caller that
   * plans several writes before storing any gives the next plan these instead of reading the
   * store again.
   */
  readonly live?: ReadonlyMap<string, readonly Dot[]>
}

/** The outcome of {@link planInsert}. */
export interface InsertPlan extends WritePlan {
  /** What to ship to the other replicas. */
  readonly delta: BigsetDelta
  /** The dot minted for each distinct element, in input order. */
  readonly added: readonly ElementAdd[]
}

/** The outcome of {@link planRemove}. */
export interface RemovePlan extends WritePlan {
  /** What to ship to the other replicas; empty when no op had a context. */
  readonly delta: BigsetDelta
}

/** The clocks of a replica that has never seen the set. */
export const FRESH_CLOCKS: BigsetClocks = Object.freeze({
  clock: freshClock(),
  tombstone: freshClock(),
})

/**
 * Algorithm 1: inserts elements at the coordinating `actor`. Each distinct element gets one new
 * dot and one element key; an element given twice is inserted once with both contexts.
 */
export function planInsert(
  keys: BigsetKeys,
  clocks: BigsetClocks,
  actor: Actor,
  ops: readonly ElementOp[],
  options: PlanOptions = {},
): InsertPlan {
  if (!isActor(actor)) throw new RangeError(`actor out of range: ${actor}`)
  const batch = new Batch(keys, clocks, options)
  const added: ElementAdd[] = []
  for (const [element, ctx] of mergeOps(ops)) {
    batch.absorb(element, ctx)
    const next = incrementClock(batch.clock, actor)
    batch.clock = next.clock
    batch.put(element, next.dot)
    added.push({ element, dot: next.dot, ctx })
  }
  return { ...batch.finish(), delta: { adds: added, removes: [] }, added }
}

/**
 * Removes elements: absorbs each op's observed context and nothing else, so it can remove only
 * what the client saw; an op without context is a no-op (and does not ship).
 */
export function planRemove(
  keys: BigsetKeys,
  clocks: BigsetClocks,
  ops: readonly ElementOp[],
  options: PlanOptions = {},
): RemovePlan {
  const batch = new Batch(keys, clocks, options)
  const removes: ElementRemove[] = []
  for (const [element, ctx] of mergeOps(ops)) {
    if (ctx.length === 0) continue
    batch.absorb(element, ctx)
    removes.push({ element, ctx })
  }
  return { ...batch.finish(), delta: { adds: [], removes } }
}

/**
 * Algorithm 2: applies a delta shipped by another replica (or the same one again: duplicates and
 * any order of delivery give the same state). Contexts are absorbed first, always, since a remove
 * of a dot may arrive before its add; an add whose dot the set-clock has seen is skipped, since
 * writing it again would resurrect a removed element.
 */
export function planApplyDelta(
  keys: BigsetKeys,
  clocks: BigsetClocks,
  delta: BigsetDelta,
  options: PlanOptions = {},
): WritePlan {
  const batch = new Batch(keys, clocks, options)
  for (const r of delta.removes) batch.absorb(r.element, r.ctx)
  for (const a of delta.adds) {
    batch.absorb(a.element, a.ctx)
    if (hasSeen(batch.clock, a.dot)) continue
    batch.clock = addDot(batch.clock, a.dot)
    batch.put(a.element, a.dot)
  }
  return batch.finish()
}

// Validates elements and merges the contexts of repeated elements, keeping first-seen order.
function mergeOps(ops: readonly ElementOp[]): Map<string, Dot[]> {
  const merged = new Map<string, Dot[]>()
  for (const op of ops) {
    checkElement(op.element)
    const ctx = merged.get(op.element)
    const more = op.ctx ?? []
    merged.set(
      op.element,
      ctx === undefined ? normalizeDots(more) : normalizeDots([...ctx, ...more]),
    )
  }
  return merged
}

class Batch {
  clock: DotClock
  tombstone: DotClock
  readonly writes: KvWrite[] = []
  readonly #start: BigsetClocks
  readonly #keys: BigsetKeys
  readonly #delete: boolean
  readonly #liveBefore: ReadonlyMap<string, readonly Dot[]> | undefined
  // Live dots of the touched elements as the batch goes, when counting.
  readonly #live = new Map<string, Dot[]>()

  constructor(keys: BigsetKeys, clocks: BigsetClocks, options: PlanOptions) {
    this.#keys = keys
    this.#start = clocks
    this.clock = clocks.clock
    this.tombstone = clocks.tombstone
    this.#delete = options.removal === 'delete'
    this.#liveBefore = options.live
  }

  absorb(element: string, ctx: readonly Dot[]): void {
    const live = this.#liveOf(element)
    for (const d of ctx) {
      if (!hasSeen(this.clock, d)) {
        this.clock = addDot(this.clock, d)
        continue
      }
      if (this.#delete) this.writes.push({ type: 'del', key: this.#keys.element(element, d) })
      else this.tombstone = addDot(this.tombstone, d)
      if (live !== undefined) {
        const at = live.findIndex((x) => sameDot(x, d))
        if (at !== -1) live.splice(at, 1)
      }
    }
  }

  put(element: string, d: Dot): void {
    this.writes.push({ type: 'put', key: this.#keys.element(element, d), value: ELEMENT_VALUE })
    this.#liveOf(element)?.push(d)
  }

  #liveOf(element: string): Dot[] | undefined {
    if (this.#liveBefore === undefined) return undefined
    let live = this.#live.get(element)
    if (live === undefined) {
      const before = this.#liveBefore.get(element)
      if (before === undefined)
        throw new RangeError(`the live dots of a touched element were not given`)
      this.#live.set(element, (live = [...before]))
    }
    return live
  }

  finish(): WritePlan {
    const clocks: BigsetClocks = { clock: this.clock, tombstone: this.tombstone }
    // Clock writes go first only for readability of the batch; the batch is atomic anyway.
    const head: KvWrite[] = []
    if (this.clock !== this.#start.clock)
      head.push({ type: 'put', key: this.#keys.clock, value: encodeClock(this.clock) })
    if (this.tombstone !== this.#start.tombstone) {
      head.push({ type: 'put', key: this.#keys.tombstone, value: encodeClock(this.tombstone) })
    }
    const writes = [...head, ...this.writes]
    if (this.#liveBefore === undefined) return { clocks, writes }
    let sizeDelta = 0
    for (const [element, live] of this.#live) {
      sizeDelta +=
        (live.length > 0 ? 1 : 0) - ((this.#liveBefore.get(element)?.length ?? 0) > 0 ? 1 : 0)
    }
    return { clocks, writes, sizeDelta, live: this.#live }
  }
}
