/**
 * The last known `sv` of a Redis replica, the reads waiting for it to cover a vector, and the
 * listeners of its advances. It only moves forward ({@link StableVector.advance}): a stale view
 * can make a waiter wait longer, never resolve early, because the stored `sv` never goes below
 * what was seen, except when the server's store itself went back ({@link StableVector.reset}):
 * a server process that restarted with less than it had, or a follower resynchronised from a
 * leader that holds less.
 */
import { covers } from '@causeway/core'
import { CoverageWaiters } from '../coverage-waiters.js'
import type { AdvanceListener } from '../partition-replica.js'

/** A monotone stable vector with waiters and listeners. */
export class StableVector {
  #sv: number[]
  readonly #waiters = new CoverageWaiters()
  readonly #listeners = new Set<AdvanceListener>()
  #closed = false

  constructor(regions: number) {
    this.#sv = new Array<number>(regions).fill(0)
  }

  /** A copy of the current vector. */
  current(): number[] {
    return [...this.#sv]
  }

  covers(need: readonly number[]): boolean {
    return covers(this.#sv, need)
  }

  /** Merges `sv` in (elementwise max); wakes waiters and notifies listeners when it advanced. */
  advance(sv: readonly number[]): void {
    if (this.#closed) return
    let advanced = false
    const next = [...this.#sv]
    for (let d = 0; d < next.length; d++) {
      const v = sv[d] ?? 0
      if (v > (next[d] ?? 0)) {
        next[d] = v
        advanced = true
      }
    }
    if (!advanced) return
    this.#sv = next
    this.#waiters.advance(next)
    for (const listener of this.#listeners) {
      try {
        listener([...next])
      } catch {
        // A failing listener must not stop the others or the replica.
      }
    }
  }

  /**
   * Replaces the view with the store's `sv` as just read, even where it is lower: after the
   * connection to the server was lost (the server may be another process now) or the server
   * replaced its data (a full resynchronisation).
   */
  reset(sv: readonly number[]): void {
    if (this.#closed) return
    const lower = sv.some((v, d) => v < (this.#sv[d] ?? 0))
    if (lower) this.#sv = this.#sv.map((v, d) => Math.min(v, sv[d] ?? 0))
    this.advance(sv)
  }

  /** Resolves `true` once the vector covers `need`, `false` at `deadline` (epoch ms) or close. */
  wait(need: readonly number[], deadline: number): Promise<boolean> {
    if (this.#closed) return Promise.resolve(false)
    return this.#waiters.wait(this.#sv, need, deadline)
  }

  onAdvance(listener: AdvanceListener): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /** True after {@link close}. */
  get closed(): boolean {
    return this.#closed
  }

  /** Resolves every waiter as not covered, clears their timers and drops listeners. */
  close(): void {
    this.#closed = true
    this.#waiters.closeAll()
    this.#listeners.clear()
  }
}
