/**
 * Quorum reads over several replicas of a set, merged incrementally (section 4.4 and the
 * reference's `bigset_read_merge`). Each replica streams its entries in element order with its
 * set-clock; a k-way merge takes the least element among the replicas' heads, merges that
 * element alone and moves on, so memory holds one entry per replica however big the set is.
 *
 * The ORSWOT join, per dot of an element: the dot survives iff some replica has it and every
 * replica either has it too or has not seen it. A replica that has seen a dot but no longer has
 * its key removed it (tombstoned keys are already dropped from a replica's stream).
 */
import { CausewayError } from '../errors.js'
import { hasSeen, type DotClock } from './clock.js'
import type { BigsetDelta } from './delta.js'
import { compareDots, normalizeDots, sameDot, type Dot } from './dot.js'
import { compareElements } from './element.js'
import type { SetEntry } from './reads.js'

/** One replica's view of one element: its set-clock and its live dots (none when absent). */
export interface ReplicaElement {
  readonly clock: DotClock
  readonly dots: readonly Dot[] | undefined
}

/** One replica's ordered stream: its set-clock (read before streaming) and its entries. */
export interface ReplicaEntries {
  readonly clock: DotClock
  readonly entries: AsyncIterable<SetEntry>
}

/** Options of {@link mergeReplicaStreams}. */
export interface MergeOptions {
  /** Most merged elements to yield. @default Infinity */
  readonly limit?: number
  /**
   * Called with the delta that would bring replica `replica` up to the merged result for one
   * element (read repair): adds it has not seen, removes of dots the others removed.
   */
  readonly onRepair?: (replica: number, delta: BigsetDelta) => void
}

/** The surviving dots of one element across replicas (the ORSWOT join). */
export function mergeElementDots(replicas: readonly ReplicaElement[]): Dot[] {
  const candidates = normalizeDots(replicas.flatMap((r) => r.dots ?? []))
  return candidates.filter((d) =>
    replicas.every(
      (r) => (r.dots !== undefined && r.dots.some((x) => sameDot(x, d))) || !hasSeen(r.clock, d),
    ),
  )
}

/** The delta that repairs one replica's view of an element, or `undefined` when it is right. */
export function repairDelta(
  element: string,
  replica: ReplicaElement,
  merged: readonly Dot[],
): BigsetDelta | undefined {
  const have = replica.dots ?? []
  const missing = merged.filter((d) => !have.some((x) => sameDot(x, d)))
  const stale = have.filter((d) => !merged.some((x) => sameDot(x, d)))
  if (missing.length === 0 && stale.length === 0) return undefined
  return {
    adds: missing.map((dot) => ({ element, dot, ctx: [] })),
    removes: stale.length > 0 ? [{ element, ctx: [...stale].sort(compareDots) }] : [],
  }
}

/**
 * Merges the ordered streams of several replicas into one ordered stream of the set's
 * elements. Stopping early stops every source.
 */
export async function* mergeReplicaStreams(
  replicas: readonly ReplicaEntries[],
  options: MergeOptions = {},
): AsyncGenerator<SetEntry> {
  const limit = options.limit ?? Infinity
  if (limit <= 0) return
  const iterators = replicas.map((r) => r.entries[Symbol.asyncIterator]())
  const heads: (SetEntry | undefined)[] = replicas.map(() => undefined)
  const advance = async (i: number): Promise<void> => {
    const previous = heads[i]
    const next = await iterators[i]!.next()
    heads[i] = next.done ? undefined : next.value
    if (
      previous !== undefined &&
      heads[i] !== undefined &&
      compareElements(previous.element, heads[i]!.element) >= 0
    ) {
      throw new CausewayError('INTERNAL', `replica ${i} streamed elements out of order`)
    }
  }
  let count = 0
  try {
    await Promise.all(iterators.map((_, i) => advance(i)))
    while (true) {
      let least: string | undefined
      for (const h of heads) {
        if (h !== undefined && (least === undefined || compareElements(h.element, least) < 0))
          least = h.element
      }
      if (least === undefined) return
      const views: ReplicaElement[] = replicas.map((r, i) => ({
        clock: r.clock,
        dots: heads[i]?.element === least ? heads[i]!.dots : undefined,
      }))
      const dots = mergeElementDots(views)
      if (options.onRepair !== undefined) {
        views.forEach((view, i) => {
          const delta = repairDelta(least, view, dots)
          if (delta !== undefined) options.onRepair!(i, delta)
        })
      }
      await Promise.all(views.map((v, i) => (v.dots !== undefined ? advance(i) : undefined)))
      if (dots.length > 0) {
        yield { element: least, dots }
        if (++count >= limit) return
      }
    }
  } finally {
    await Promise.all(iterators.map((it) => it.return?.()))
  }
}
