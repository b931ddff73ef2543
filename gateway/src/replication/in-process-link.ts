/**
 * A {@link ShippingLink} inside one process, with a simulated one-way WAN delay each way: a batch
 * reaches the destination `delayMs` after it was sent and its acknowledgement comes back
 * `delayMs` later. Batches travel one FIFO line, so pipelined sends arrive in order.
 */
import type { ShipEnvelope } from '@causeway/core'
import type { AbstractPartitionReplica } from '../storage/abstract-partition-replica.js'
import { DelayedRoundTrip } from './delayed-round-trip.js'
import type { ShippingLink } from './shipping-link.js'

/** Options of an {@link InProcessLink}. */
export interface InProcessLinkOptions {
  /** The region whose entries travel on this link. */
  origin: number
  /**
   * The leader of the same partition in the destination region (or, with causal shipping, the
   * destination region's inbox of that partition, which looks the same to a link).
   */
  destination: Pick<AbstractPartitionReplica, 'sv' | 'receive'>
  /**
   * One-way delay, in ms.
   * @default 0
   */
  delayMs?: number
}

/** A shipping link to a replica in the same process. */
export class InProcessLink implements ShippingLink {
  readonly #origin: number
  readonly #destination: Pick<AbstractPartitionReplica, 'sv' | 'receive'>
  readonly #wan: DelayedRoundTrip

  constructor(options: InProcessLinkOptions) {
    this.#origin = options.origin
    this.#destination = options.destination
    this.#wan = new DelayedRoundTrip(options.delayMs ?? 0)
  }

  checkpoint(): Promise<number> {
    return this.#wan.call(async () => this.#destination.sv()[this.#origin] ?? 0)
  }

  send(envelope: ShipEnvelope): Promise<number> {
    return this.#wan.call(() => this.#destination.receive(envelope))
  }

  async close(): Promise<void> {
    this.#wan.close()
  }
}
