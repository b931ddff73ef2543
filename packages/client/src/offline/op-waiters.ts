/**
 * Callers waiting for the outcome of their queued write: resolved with its result, rejected with
 * a permanent refusal, or told it stays pending (after their deadline, or when the replay stops).
 * Outcomes are also posted to the other clients of the store, whose callers may be waiting.
 */
import { CausewayError } from '@causeway/core'
import type { WriteResult } from '../client.js'
import type { PendingWrite } from './outbox-types.js'
import { resultOf } from './outcome.js'
import type { OpOutcome, TabChannel } from './tab-channel.js'

interface Waiter {
  resolve(result: WriteResult | PendingWrite): void
  reject(error: unknown): void
  timer: ReturnType<typeof setTimeout> | undefined
}

export class OpWaiters {
  readonly #waiters = new Map<string, Waiter>()
  readonly #channel: TabChannel

  constructor(channel: TabChannel) {
    this.#channel = channel
  }

  /** How many callers wait. */
  get size(): number {
    return this.#waiters.size
  }

  /** The op ids waited for. */
  ids(): string[] {
    return [...this.#waiters.keys()]
  }

  /** The outcome of `opId`: pending when none came within `timeoutMs`. */
  waitFor(opId: string, timeoutMs: number): Promise<WriteResult | PendingWrite> {
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, timer: undefined }
      waiter.timer = setTimeout(() => {
        this.#waiters.delete(opId)
        resolve({ pending: true, opId })
      }, timeoutMs)
      this.#waiters.set(opId, waiter)
    })
  }

  /** Settles the caller waiting for `outcome.opId`, if any (here). */
  settle(outcome: OpOutcome): void {
    const waiter = this.#waiters.get(outcome.opId)
    if (waiter === undefined) return
    this.#waiters.delete(outcome.opId)
    clearTimeout(waiter.timer)
    if ('result' in outcome) waiter.resolve(resultOf(outcome.result))
    else if ('error' in outcome) waiter.reject(CausewayError.fromBody(outcome.error))
    else waiter.resolve({ pending: true, opId: outcome.opId })
  }

  /** What each waiting caller learns: here, and in the other tabs. */
  report(outcomes: OpOutcome[]): void {
    if (outcomes.length === 0) return
    for (const o of outcomes) this.settle(o)
    this.#channel.post({ t: 'outcomes', outcomes })
  }

  /** Tells every caller still waiting that its write stays pending. */
  close(): void {
    for (const [opId, waiter] of this.#waiters) {
      clearTimeout(waiter.timer)
      waiter.resolve({ pending: true, opId })
    }
    this.#waiters.clear()
  }
}
