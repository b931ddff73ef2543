/**
 * A {@link ShippingLink} inside one process, with a simulated one-way WAN delay each way: a batch
 * reaches the destination `delayMs` after it was sent and its acknowledgement comes back
 * `delayMs` later. Batches travel one FIFO line, so pipelined sends arrive in order.
 */
import type { PartitionReplica } from '../storage/partition-replica.js'
import type { LogEntry } from '../storage/partition-replica.js'
import { DelayedRoundTrip } from './delayed-round-trip.js'
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
  readonly #wan: DelayedRoundTrip

  constructor(options: InProcessLinkOptions) {
    this.#origin = options.origin
    this.#destination = options.destination
    this.#wan = new DelayedRoundTrip(options.delayMs ?? 0)
  }

  checkpoint(): Promise<number> {
    return this.#wan.call(async () => this.#destination.sv()[this.#origin] ?? 0)
  }

  send(entries: readonly LogEntry[]): Promise<number> {
    return this.#wan.call(() => this.#destination.receive(this.#origin, entries))
  }

  async close(): Promise<void> {
    this.#wan.close()
  }
}
