/**
 * A {@link ShippingLink} inside one process, with a simulated one-way WAN delay each way: a batch
 * reaches the destination `delayMs` after it was sent and its acknowledgement comes back
 * `delayMs` later. Batches travel one FIFO line, so pipelined sends arrive in order.
 */
import type { PartitionReplica } from '../storage/partition-replica.js'
import type { LogEntry } from '../storage/partition-replica.js'
import { DelayLine } from './delay-line.js'
import type { ShippingLink } from './shipping-link.js'

/** Options of an {@link InProcessLink}. */
export interface InProcessLinkOptions {
  /** The region whose entries travel on this link. */
  origin: number
  /** The leader of the same partition in the destination region. */
  destination: PartitionReplica
  /**
   * One-way delay, in ms.
   * @default 0
   */
  delayMs?: number
}

/** A shipping link to a replica in the same process. */
export class InProcessLink implements ShippingLink {
  readonly #origin: number
  readonly #destination: PartitionReplica
  readonly #there: DelayLine
  readonly #back: DelayLine
  readonly #pending = new Set<(error: Error) => void>()
  #closed = false

  constructor(options: InProcessLinkOptions) {
    this.#origin = options.origin
    this.#destination = options.destination
    this.#there = new DelayLine(options.delayMs ?? 0)
    this.#back = new DelayLine(options.delayMs ?? 0)
  }

  checkpoint(): Promise<number> {
    return this.#call(async () => this.#destination.sv()[this.#origin] ?? 0)
  }

  send(entries: readonly LogEntry[]): Promise<number> {
    return this.#call(() => this.#destination.receive(this.#origin, entries))
  }

  async close(): Promise<void> {
    this.#closed = true
    this.#there.close()
    this.#back.close()
    const error = new Error('shipping link closed')
    for (const reject of this.#pending) reject(error)
    this.#pending.clear()
  }

  // Runs `atDestination` one delay from now, in FIFO order, and answers one delay after it settles.
  #call<T>(atDestination: () => Promise<T>): Promise<T> {
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
        atDestination().then(
          (value) => answer(() => resolve(value)),
          (error: unknown) => answer(() => reject(error)),
        )
      })
    })
  }
}
