/**
 * The last known `sv` of a replica, the reads waiting for it to cover a vector, and the listeners
 * of its advances. It only moves forward: a stale view can make a waiter wait longer, never
 * resolve early, because the stored `sv` never goes below what was seen.
 */
import type { AdvanceListener } from '../partition-replica.js'

interface Waiter {
  need: readonly number[]
  resolve: (covered: boolean) => void
  timer: ReturnType<typeof setTimeout>
}

// setTimeout fires at once for delays above 2^31-1 ms; longer deadlines wait in steps.
const MAX_TIMER_MS = 2 ** 31 - 1

/** True when `sv` covers `need` (missing entries count as 0). */
export function covers(sv: readonly number[], need: readonly number[]): boolean {
  for (let d = 0; d < need.length; d++) if ((sv[d] ?? 0) < (need[d] ?? 0)) return false
  return true
}

/** A monotone stable vector with waiters and listeners. */
export class StableVector {
  #sv: number[]
  readonly #waiters = new Set<Waiter>()
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

  /** Merges `sv` in (elementwise max); notifies listeners and wakes waiters when it advanced. */
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
    for (const waiter of this.#waiters) if (covers(next, waiter.need)) this.#settle(waiter, true)
    for (const listener of this.#listeners) {
      try {
        listener([...next])
      } catch {
        // A failing listener must not stop the others or the replica.
      }
    }
  }

  /** Resolves `true` once the vector covers `need`, `false` at `deadline` (epoch ms) or close. */
  wait(need: readonly number[], deadline: number): Promise<boolean> {
    if (this.covers(need)) return Promise.resolve(true)
    if (this.#closed || deadline <= Date.now()) return Promise.resolve(false)
    return new Promise((resolve) => {
      const waiter: Waiter = { need: [...need], resolve, timer: undefined as never }
      const arm = () => {
        const left = deadline - Date.now()
        if (left <= 0) return this.#settle(waiter, false)
        waiter.timer = setTimeout(arm, Math.min(left, MAX_TIMER_MS))
      }
      this.#waiters.add(waiter)
      arm()
    })
  }

  onAdvance(listener: AdvanceListener): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /** True after {@link close}. */
  get closed(): boolean {
    return this.#closed
  }

  /** Number of pending waiters (for tests and metrics). */
  get waiting(): number {
    return this.#waiters.size
  }

  /** Resolves every waiter as not covered, clears their timers and drops listeners. */
  close(): void {
    this.#closed = true
    for (const waiter of this.#waiters) this.#settle(waiter, false)
    this.#listeners.clear()
  }

  #settle(waiter: Waiter, covered: boolean): void {
    clearTimeout(waiter.timer)
    this.#waiters.delete(waiter)
    waiter.resolve(covered)
  }
}
