/**
 * The vector timestamps this process's writers gave their updates (the client's vector clock, with
 * the update's own HLC in its region's entry), kept until the stabiliser replicas of the process
 * have read the updates' labels. A label whose writer's record is not here (another gateway
 * process wrote it, or this one restarted) gets the region's `SiteTime` instead, which is later
 * (`partition-feed.ts`).
 */
import type { Hlc } from '@causeway/core'

/** Vector timestamps of local updates, by partition and idx. */
export class CausalDeps {
  readonly #parts: Map<number, readonly Hlc[]>[]
  readonly #max: number

  /** @param maxPerPartition most records kept per partition (the oldest go first). */
  constructor(partitions: number, maxPerPartition = 100_000) {
    this.#parts = Array.from({ length: partitions }, () => new Map())
    this.#max = maxPerPartition
  }

  /** Records the vector timestamp of local update `idx` of partition `p`. */
  record(p: number, idx: number, vts: readonly Hlc[]): void {
    const part = this.#parts[p]
    if (!part) return
    part.set(idx, vts)
    if (part.size > this.#max) part.delete(part.keys().next().value!)
  }

  /** The vector timestamp of local update `idx` of partition `p`, if recorded here. */
  get(p: number, idx: number): readonly Hlc[] | undefined {
    return this.#parts[p]?.get(idx)
  }

  /** Forgets the records of updates up to `applied[p]` (applied in every region). */
  prune(applied: readonly number[]): void {
    this.#parts.forEach((part, p) => {
      for (const idx of part.keys()) {
        if (idx > (applied[p] ?? 0)) break
        part.delete(idx)
      }
    })
  }
}
