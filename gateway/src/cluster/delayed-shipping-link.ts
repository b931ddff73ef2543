/**
 * An emulated WAN in front of any {@link ShippingLink}, for benchmarks and tests on one machine
 * (`causeway dev --backend redis --wan-delay MS`): every call reaches the inner link `delayMs`
 * after it was made and its answer comes back `delayMs` after the inner link answered, as the
 * embedded cluster's in-process link does. Calls travel one FIFO line each way, so pipelined
 * batches still arrive in order (the inner link keeps its own order for what it is handed).
 */
import type { LogEntry } from '../storage/partition-replica.js'
import { DelayLine } from '../replication/delay-line.js'
import type { ShippingLink } from '../replication/shipping-link.js'

/** A {@link ShippingLink} whose calls and answers each take `delayMs` longer. */
export class DelayedShippingLink implements ShippingLink {
  readonly #inner: ShippingLink
  readonly #there: DelayLine
  readonly #back: DelayLine
  readonly #pending = new Set<(error: Error) => void>()
  #closed = false

  /** @param delayMs one-way delay in ms (0 still answers asynchronously). */
  constructor(inner: ShippingLink, delayMs: number) {
    this.#inner = inner
    this.#there = new DelayLine(delayMs)
    this.#back = new DelayLine(delayMs)
  }

  checkpoint(): Promise<number> {
    return this.#call(() => this.#inner.checkpoint())
  }

  send(entries: readonly LogEntry[]): Promise<number> {
    return this.#call(() => this.#inner.send(entries))
  }

  async close(): Promise<void> {
    this.#closed = true
    this.#there.close()
    this.#back.close()
    const error = new Error('shipping link closed')
    for (const reject of this.#pending) reject(error)
    this.#pending.clear()
    await this.#inner.close()
  }

  #call<T>(call: () => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(new Error('shipping link closed'))
    return new Promise<T>((resolve, reject) => {
      this.#pending.add(reject)
      const answer = (settle: () => void) => {
        if (this.#closed) return
        this.#back.push(() => {
          this.#pending.delete(reject)
          settle()
        })
      }
      this.#there.push(() => {
        call().then(
          (value) => answer(() => resolve(value)),
          (error: unknown) => answer(() => reject(error)),
        )
      })
    })
  }
}
