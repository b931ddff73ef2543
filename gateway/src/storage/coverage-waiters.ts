/**
 * Reads that wait for a replica's stable vector to cover what they need. Backends call
 * {@link CoverageWaiters.advance} whenever `sv` grows; each waiter has one deadline timer. No
 * polling: a waiter is only looked at when `sv` changes or its own timer fires.
 */
import { covers } from '@causeway/core'

interface Waiter {
  need: readonly number[]
  deadline: number
  resolve: (covered: boolean) => void
  timer: ReturnType<typeof setTimeout> | undefined
}

// setTimeout overflows (and fires at once) past this many ms.
const MAX_TIMER_MS = 2 ** 31 - 1

/** The waiters of one replica. */
export class CoverageWaiters {
  #waiters = new Set<Waiter>()

  /** Number of reads currently waiting. */
  get size(): number {
    return this.#waiters.size
  }

  /**
   * Resolves `true` once `sv` covers `need` (at once if the given `sv` does), `false` when `deadline`
   * (epoch ms) passes first or {@link CoverageWaiters.closeAll} runs.
   */
  wait(sv: readonly number[], need: readonly number[], deadline: number): Promise<boolean> {
    if (covers(sv, need)) return Promise.resolve(true)
    if (deadline <= Date.now()) return Promise.resolve(false)
    return new Promise<boolean>((resolve) => {
      const waiter: Waiter = { need, deadline, resolve, timer: undefined }
      this.#waiters.add(waiter)
      this.#arm(waiter)
    })
  }

  /** Wakes every waiter that `sv` now covers. */
  advance(sv: readonly number[]): void {
    for (const waiter of this.#waiters) {
      if (covers(sv, waiter.need)) this.#settle(waiter, true)
    }
  }

  /** Resolves every waiter as not covered (the replica is closing or failed). */
  closeAll(): void {
    for (const waiter of this.#waiters) this.#settle(waiter, false)
  }

  // Timers may fire a little early, and cannot span more than ~24 days: re-arm until the deadline.
  #arm(waiter: Waiter): void {
    const remaining = waiter.deadline - Date.now()
    if (remaining <= 0) return this.#settle(waiter, false)
    waiter.timer = setTimeout(() => this.#arm(waiter), Math.min(remaining, MAX_TIMER_MS))
  }

  #settle(waiter: Waiter, covered: boolean): void {
    if (!this.#waiters.delete(waiter)) return
    clearTimeout(waiter.timer)
    waiter.resolve(covered)
  }
}
